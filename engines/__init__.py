"""The three dialects of hook events relaybay hears (docs/rules.md §1.6): Claude Code's, Codex
CLI's and Gemini CLI's.

Codex CLI 0.171.0 speaks Claude Code's dialect: the same event names, payload fields and
answers. Gemini CLI 0.61.0 names its events its own way and answers a Stop differently:

| Gemini CLI  | relaybay's handling | what its answer can carry to the model |
|---|---|---|
| BeforeAgent | UserPromptSubmit | `additionalContext`, as `<hook_context>` after the prompt |
| BeforeTool  | PreToolUse       | no context (Gemini ignores `additionalContext` there); `tool_input` merges into the call's arguments; `{"decision": "deny", "reason": …}` stops the call |
| AfterTool   | PostToolUse      | `additionalContext`, as `<hook_context>` after the tool's result |
| AfterAgent  | Stop             | `{"decision": "deny", "reason": …}`: the reason is sent as a new user turn |

Which CLI calls is what the hook client says (`relaybay-hook --engine codex` in the hook
commands `manage.py connect` writes, spliced into the payload as `relaybay_engine`); a payload
that says nothing is Gemini CLI's when its event is one only Gemini CLI has, else Claude Code's.
Everything else (linking, state, delivery, the budget, the Stop cap, what is stored) is one
path for the three, in ingest.py.
"""

from dataclasses import dataclass

from enum import StrEnum

from core.errors import InvalidInput
from core.mcp_tools import CARRIES_MESSAGE_TEXT

ENGINE_FIELD = "relaybay_engine"


class Engine(StrEnum):
    """The CLIs relaybay hears, by the name Session.engine stores."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI = "gemini"


ENGINE_NAMES = tuple(Engine)

# Gemini CLI's event names for the events relaybay handles (the others keep their own name and
# are only recorded), and the ones only Gemini CLI has.
GEMINI_EVENTS = {"BeforeAgent": "UserPromptSubmit", "BeforeTool": "PreToolUse", "AfterTool": "PostToolUse", "AfterAgent": "Stop"}
GEMINI_ONLY = {*GEMINI_EVENTS, "BeforeModel", "AfterModel", "BeforeToolSelection", "PreCompress"}

# The events whose answer reaches the model through `additionalContext`, as relaybay names them.
CONTEXT_EVENTS = {
    Engine.CLAUDE_CODE: frozenset({"UserPromptSubmit", "PreToolUse", "PostToolUse"}),
    Engine.CODEX: frozenset({"UserPromptSubmit", "PreToolUse", "PostToolUse"}),
    Engine.GEMINI: frozenset({"UserPromptSubmit", "PostToolUse"}),
}
# How each CLI is told to go on with the Stop reason as the model's next input.
STOP_DECISION = {Engine.CLAUDE_CODE: "block", Engine.CODEX: "block", Engine.GEMINI: "deny"}

# relaybay's MCP tools that take the caller's hook_session (the ones that name their caller).
NAMES_CALLER = frozenset(CARRIES_MESSAGE_TEXT) - {"sessions_list"}
# The server name `manage.py connect gemini` gives relaybay's MCP server in settings.json.
MCP_SERVER = "relaybay"


@dataclass(frozen=True)
class Dialect:
    """One payload's CLI and event: `name` as the CLI calls it, `event` as relaybay handles it."""

    engine: str
    name: str
    event: str

    @property
    def delivers_context(self):
        return self.event in CONTEXT_EVENTS[self.engine]

    @property
    def stop_decision(self):
        return STOP_DECISION[self.engine]


def engine_of(payload):
    """The CLI a checked payload comes from (see the module's docstring); a declared engine
    relaybay does not know is refused."""
    declared = payload.get(ENGINE_FIELD)
    if declared is None:
        return Engine.GEMINI if payload["hook_event_name"] in GEMINI_ONLY else Engine.CLAUDE_CODE
    if declared not in ENGINE_NAMES:
        known = ", ".join(ENGINE_NAMES)
        raise InvalidInput(f"The hook payload's {ENGINE_FIELD} must be one of {known}; the hook client sets it from --engine.")
    return Engine(declared)


def dialect_of(payload):
    engine = engine_of(payload)
    name = payload["hook_event_name"]
    event = GEMINI_EVENTS.get(name, name) if engine == Engine.GEMINI else name
    return Dialect(engine=engine, name=name, event=event)


def denied(dialect, reason):
    """The answer that stops a tool call before it runs, with the reason its model reads: Claude
    Code's and Codex CLI's PreToolUse `permissionDecision: "deny"`; Gemini CLI's BeforeTool
    `decision: "deny"` (seen, 0.61.0: the tool does not run and the model gets "Tool execution
    blocked: REASON")."""
    if dialect.engine == Engine.GEMINI:
        return {"decision": "deny", "reason": reason}
    return {"hookSpecificOutput": {"hookEventName": dialect.name, "permissionDecision": "deny", "permissionDecisionReason": reason}}


def caller_filled_in(dialect, payload):
    """The answer before a call of relaybay's own MCP tools: the call's arguments with the
    session's id as `hook_session`, so the MCP server knows which session calls. The id is the
    CLI's, replacing any the model wrote. None for every other payload.

    Gemini CLI's BeforeTool: Gemini's MCP requests name no session, and it takes the answer's
    `tool_input` as the call's whole arguments (seen, 0.61.0). Claude Code's PreToolUse of
    `mcp__<server>__<tool>` where the server's name ends in "relaybay" (`relaybay`, or the
    plugin's `plugin_relaybay_relaybay`): Claude Code runs the tool with the answer's
    `updatedInput` (seen, 2.1.328). The plugin's http MCP server gets no process proof (Claude
    Code gives a plugin's headersHelper no CLAUDE_CODE_MESSAGING_TOKEN), so this is how it learns
    the caller; for the other entries it agrees with the proof."""
    arguments = payload.get("tool_input")
    if dialect.engine == Engine.GEMINI and dialect.name == "BeforeTool":
        mcp = payload.get("mcp_context") if isinstance(payload.get("mcp_context"), dict) else {}
        server, tool, field = mcp.get("server_name"), mcp.get("tool_name"), "tool_input"
    elif dialect.engine == Engine.CLAUDE_CODE and dialect.name == "PreToolUse" and str(payload.get("tool_name")).startswith("mcp__"):
        server, _, tool = payload["tool_name"][len("mcp__"):].rpartition("__")
        server, field = (MCP_SERVER if server.endswith(MCP_SERVER) else server), "updatedInput"
    else:
        return None
    if server != MCP_SERVER or not isinstance(tool, str) or tool not in NAMES_CALLER or not isinstance(arguments, dict):
        return None
    filled_in = {**arguments, "hook_session": payload["session_id"]}
    return {"hookSpecificOutput": {"hookEventName": dialect.name, field: filled_in}}
