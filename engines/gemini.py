"""Gemini CLI 0.61.0 (docs/rules.md §1.6): its own event names and Stop answer, seen offline:

| Gemini CLI  | relaybay's handling | what its answer can carry to the model |
|---|---|---|
| BeforeAgent | UserPromptSubmit | `additionalContext`, as `<hook_context>` after the prompt |
| BeforeTool  | PreToolUse       | no context (Gemini ignores `additionalContext` there); `tool_input` merges into the call's arguments; `{"decision": "deny", "reason": …}` stops the call |
| AfterTool   | PostToolUse      | `additionalContext`, as `<hook_context>` after the tool's result |
| AfterAgent  | Stop             | `{"decision": "deny", "reason": …}`: the reason is sent as a new user turn |

Its hooks run only inside a turn: an idle Gemini session is never woken. Its MCP requests name no
session: its BeforeTool hook fills the caller in. `manage.py connect gemini` writes hooks and
relaybay's MCP server into ~/.gemini/settings.json.
"""

from .base import Engine, JsonSettings, mcp_tool_call


class Gemini(Engine):
    name = "gemini"
    label = "Gemini CLI"
    hue = 222
    connect_name = "gemini"
    connector = "json_settings"
    settings = JsonSettings(
        path=".gemini/settings.json",
        events=("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "Notification", "SessionEnd"),
        matched=frozenset({"BeforeTool", "AfterTool"}),
        timeout_unit=1000,
        # `gemini -p` offers an untrusted server's tools to the model only after asking.
        server_entry={"trust": True},
    )
    events = {
        "SessionStart": "SessionStart",
        "BeforeAgent": "UserPromptSubmit",
        "BeforeTool": "PreToolUse",
        "AfterTool": "PostToolUse",
        "AfterAgent": "Stop",
        "SessionEnd": "SessionEnd",
    }
    own_events = frozenset({*events} - {"SessionStart", "SessionEnd"} | {"BeforeModel", "AfterModel", "BeforeToolSelection", "PreCompress"})
    # BeforeTool's additionalContext is ignored: nothing is claimed there.
    context_events = frozenset({"UserPromptSubmit", "PostToolUse"})
    context_reaches = "`additionalContext` (as `<hook_context>`)"
    stop_continues = "`{\"decision\": \"deny\"}`"
    model_text = ("prompt_response",)
    # Its BeforeTool and AfterTool name the file in `file_path` (seen).
    edit_tools = {"write_file": ("file_path",), "replace": ("file_path",)}
    idle_note = "Gemini CLI has no hook that waits while you are idle: what is sent to you arrives at your next prompt or tool call."
    caller_note = "`bin/relaybay-mcp` (`trust: true`); the session id its BeforeTool hook writes into the call's arguments"
    restart_note = "keeps it: a call while relaybay is down fails (`fetch failed`), the next after it works"
    # No hook can answer a permission request: its Notification says a tool waits for the person.
    answers_permissions = False
    permission_notice = "ToolPermission"
    permission_note = "none: its Notification `ToolPermission` is shown; answered in the terminal"
    notes = {
        "start": ", put before the first prompt",
        "prompt": " (`<hook_context>` after the prompt)",
        "tool": " only: Gemini ignores `additionalContext` at BeforeTool, so nothing is claimed there",
        "stop": ": the reason is sent as a new user turn, whose BeforeAgent is no new turn for the cap (`delivery.handed_back`)",
        "edits": " (BeforeTool's context is ignored)",
    }

    def continued(self, name, reason):
        # Seen: AfterAgent's deny sends the reason as a new user turn.
        return {"decision": "deny", "reason": reason}

    def denied(self, name, reason):
        # Seen: the tool does not run and the model gets "Tool execution blocked: REASON".
        return {"decision": "deny", "reason": reason}

    def permission(self, name, *, allow, scope="once", tool="", message=""):
        return None

    def caller_filled_in(self, name, payload):
        """BeforeTool of one of relaybay's tools: Gemini takes the answer's `tool_input` as the
        call's whole arguments (seen)."""
        if name != "BeforeTool":
            return None
        mcp = payload.get("mcp_context") if isinstance(payload.get("mcp_context"), dict) else {}
        found = mcp_tool_call(mcp.get("server_name"), mcp.get("tool_name"), payload, "tool_input")
        return {"hookSpecificOutput": {"hookEventName": name, **found}} if found else None


ENGINE = Gemini()
