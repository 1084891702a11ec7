"""What an agent CLI is to relaybay, declared once per CLI (docs/rules.md §1.6).

An engine module (engines/claude_code.py and its siblings) makes one Engine: its event
names and how relaybay handles each, the events whose answer reaches the model, how its
answers are shaped (context, a Stop that goes on, a denied tool call, a permission request),
the tools of it that edit files, how its sessions are known and woken, how `manage.py connect`
writes its configuration and the hook client's flag for it. The rest of relaybay asks the
engine (a hook's `Call.engine`, engines.of(session.engine)), never its name: a CLI is one
module, as a database backend is one package whose features the ORM asks.
"""

from dataclasses import dataclass, field
from enum import StrEnum

from core.mcp_tools import NAMES_CALLER

from .installed import json_settings_connection

# The events relaybay handles, by relaybay's names (Claude Code's); a CLI's other events are
# recorded under their own name and change nothing.
HANDLED = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd", "PermissionRequest")
# The server name `manage.py connect` gives relaybay's MCP server in a CLI's configuration.
MCP_SERVER = "relaybay"
# What of an edit tool's call is kept in place of the file's content (docs/rules.md §7.2).
FILE_CONTENT_PLACEHOLDER = "[not stored: file content]"
# What an edit tool's result holds besides the file's content (old and new text, the patch,
# the whole original file): kept in its stored event.
RESPONSE_KEPT = ("filePath", "file_path", "notebook_path", "type", "success")


class Wake(StrEnum):
    """How an idle session of the CLI can be woken (docs/rules.md §2.2)."""

    HOOK = "hook"  # a hook that waits while the session is idle (Claude Code's asyncRewake)
    WAITER = "waiter"  # only while the waiter its Stop hook leaves runs
    NEVER = "never"  # hooks run only inside a turn


class Caller(StrEnum):
    """How relaybay knows which session calls its MCP tools (docs/rules.md §1.5)."""

    PROVEN = "proven"  # a secret of the calling process
    BELIEVED = "believed"  # a session id the CLI writes, which relaybay believes


@dataclass(frozen=True)
class JsonSettings:
    """How `connect` writes a CLI that keeps hooks (in Claude Code's format) and MCP servers in
    one JSON settings file (install/connectors/json_settings.py)."""

    path: str  # the file, under the person's home folder
    events: tuple  # the hook events connected, by the CLI's names
    matched: frozenset = frozenset()  # events whose matcher names tools ("*": every tool)
    timeout_unit: int = 1  # hook timeouts in seconds × this (1000: milliseconds)
    servers_key: str = "mcpServers"
    server_entry: dict = field(default_factory=dict)  # the MCP entry's fields besides url and token


class Engine:
    """One agent CLI. Subclasses set the declarations; the methods are the answers relaybay
    writes, in the CLI's shapes. Defaults are Claude Code's dialect, which Codex CLI shares."""

    name = ""  # Session.engine's value, and what the hook client's --engine flag says
    label = ""  # as people call it
    hue = 37  # its badge's colour on the board, a hue (0–360) of board.css's engine badge
    # `manage.py connect NAME`, and the install module that writes its configuration
    # (install/connectors/<connector>.py).
    connect_name = ""
    connector = ""
    settings = None  # a JsonSettings, for the json_settings connector
    # The CLI's event names → the event relaybay handles them as (an event not named keeps its
    # own name and is only recorded).
    events = {name: name for name in HANDLED}
    # Events no other CLI sends: a payload that names no engine is this one's by them.
    own_events = frozenset()
    # relaybay's events whose answer reaches the model as context, and how (for the docs).
    context_events = frozenset({"UserPromptSubmit", "PreToolUse", "PostToolUse"})
    context_reaches = "`additionalContext`"
    stop_continues = "`{\"decision\": \"block\"}`"
    # Fields of its payloads that hold the model's words (never stored).
    model_text = ("last_assistant_message",)
    # Tools that write files → the input fields naming the file; `patch_tools` hold a patch.
    edit_tools = {}
    patch_tools = frozenset()
    wake = Wake.NEVER
    idle_note = ""  # what a session of it is told about being woken while idle
    caller = Caller.BELIEVED
    caller_note = ""  # how the MCP server learns the calling session (for the docs)
    process_note = "heard from within 10 minutes"  # how relaybay knows its process runs
    # What the CLI does with relaybay's http MCP server across a relaybay restart (seen; for the docs).
    restart_note = ""
    # Why a session of it whose MCP calls name it may have sent no hook, and what to do (the board).
    unheard_note = ""
    native_messages = False  # Claude Code's own SendMessage between sessions (docs/rules.md §4.9)
    desktop_rows = False  # its sessions may be guessed into a desktop app's row by folder
    # A permission request (docs/rules.md §8): whether its PermissionRequest hook can wait for
    # the owner's answer, whether that answer can allow a tool for the rest of the session, and
    # the Notification type by which a CLI with no such hook says a tool waits for the person.
    answers_permissions = True
    session_rules = False
    permission_notice = ""
    permission_note = ""  # what answers a permission request (for the docs)
    notes = {}  # a docs table row's extra words for this CLI, by row

    # --- This machine ----------------------------------------------------------------------------

    def connection(self, home):
        """How the CLI is connected to relaybay in `home` (engines/installed.py), or None."""
        return json_settings_connection(self, home) if self.settings else None

    # --- Events --------------------------------------------------------------------------------

    def event_of(self, name):
        """The event relaybay handles a payload named `name` as."""
        return self.events.get(name, name)

    def name_of(self, event):
        """The CLI's name for relaybay's `event`, or None when it sends none."""
        return next((name for name, handled in self.events.items() if handled == event), None)

    def delivers_context(self, event):
        return event in self.context_events

    def is_wake_prompt(self, prompt):
        """Whether a prompt (a string) is this CLI's wake-up of an idle session, not what a person typed."""
        return False

    # --- Answers -------------------------------------------------------------------------------

    def context(self, name, text):
        """The answer that puts `text` before the model at the CLI's event `name`."""
        return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}

    def continued(self, name, reason):
        """The Stop answer that makes the turn go on with `reason` as the model's next input."""
        return {"decision": "block", "reason": reason}

    def denied(self, name, reason):
        """The answer that stops a tool call before it runs, with the reason its model reads."""
        return {"hookSpecificOutput": {"hookEventName": name, "permissionDecision": "deny", "permissionDecisionReason": reason}}

    def permission(self, name, *, allow, scope="once", tool="", message=""):
        """The answer to a permission request that gives the CLI the owner's decision (a denial's
        `message` the model reads as the tool's error; `scope` "session": the tool is allowed for
        the rest of the session, where the CLI takes such a rule), or None when the CLI takes
        its answer in the terminal only."""
        if allow:
            decision = {"behavior": "allow"}
            if scope == "session" and self.session_rules and tool:
                decision["updatedPermissions"] = [
                    {"type": "addRules", "rules": [{"toolName": tool}], "behavior": "allow", "destination": "session"}
                ]
        else:
            decision = {"behavior": "deny", "message": message}
        return {"hookSpecificOutput": {"hookEventName": name, "decision": decision}}

    def caller_filled_in(self, name, payload):
        """Before a call of relaybay's own MCP tools: the answer giving the call's arguments with
        the session's id as `hook_session`, so the MCP server knows which session calls. None
        for every other payload, and for a CLI that names its caller another way."""
        return None

    def mcp_session(self, meta):
        """The calling session's id as the CLI writes it in an MCP call's `_meta`, or None."""
        return None

    # --- Files ---------------------------------------------------------------------------------

    def edit_fields(self, tool_name):
        """The input fields naming the file of an edit tool, or None for a tool that edits nothing."""
        return self.edit_tools.get(tool_name) if isinstance(tool_name, str) else None

    def edited_paths(self, tool_name, tool_input):
        """The paths a tool call says it will write, as given."""
        fields = self.edit_fields(tool_name)
        if not fields or not isinstance(tool_input, dict):
            return []
        given = [tool_input[name] for name in fields if isinstance(tool_input.get(name), str)]
        if tool_name in self.patch_tools:
            return [path for patch in given for path in self.patched_files(patch)]
        return given

    def patched_files(self, patch):
        """The files a patch of one of `patch_tools` names."""
        return []

    def without_file_content(self, payload):
        """A hook payload as it may be stored (docs/rules.md §7.2): of an edit tool's call only
        the paths it names and its result's kind; its text, the file's old and new content and
        any error quoting them are replaced by FILE_CONTENT_PLACEHOLDER."""
        fields = self.edit_fields(payload.get("tool_name"))
        if not fields:
            return payload
        data = dict(payload)
        if data["tool_name"] in self.patch_tools and isinstance(data.get("tool_input"), dict):
            # A patch is the files' content: of it only the files it names are kept.
            fields = ("files",)
            data["tool_input"] = {**data["tool_input"], "files": self.edited_paths(data["tool_name"], data["tool_input"])}
        for key, kept in (("tool_input", fields), ("tool_response", RESPONSE_KEPT)):
            value = data.get(key)
            if isinstance(value, dict):
                data[key] = {k: (v if k in kept else FILE_CONTENT_PLACEHOLDER) for k, v in value.items()}
            elif key in data:
                data[key] = FILE_CONTENT_PLACEHOLDER
        if "error" in data:
            data["error"] = FILE_CONTENT_PLACEHOLDER
        return data

    def __repr__(self):
        return f"<engine {self.name}>"


def mcp_tool_call(server, tool, payload, field):
    """The shared end of caller_filled_in: the answer's field holding the call's arguments with
    the session's id, when the call is one of relaybay's tools that name their caller."""
    arguments = payload.get("tool_input")
    if server != MCP_SERVER or not isinstance(tool, str) or tool not in NAMES_CALLER or not isinstance(arguments, dict):
        return None
    return {field: {**arguments, "hook_session": payload["session_id"]}}
