"""How each agent CLI asks the person for permission and is told the owner's answer
(docs/rules.md §1.6, §8). approvals/ reads this table alone, so another CLI is one more entry.

Claude Code 2.1.328 (seen): its PermissionRequest hook answers
`{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": D}}`, D being
`{"behavior": "allow"}` (with `updatedPermissions` adding a rule for the session) or
`{"behavior": "deny", "message": …}`, which the model reads as the tool's error.
Codex CLI 0.171.0: the same event and answer shape (docs/rules.md §1.6); it takes no session rule.
Gemini CLI 0.61.0: no hook that can answer; its Notification says a tool waits for the person.
"""

from . import Engine

CLAUDE_CODE = Engine.CLAUDE_CODE
CODEX = Engine.CODEX
GEMINI = Engine.GEMINI

# The CLIs whose PermissionRequest hook can wait for the owner's answer.
ANSWERS_PERMISSIONS = frozenset({CLAUDE_CODE, CODEX})
# The CLIs whose answer can allow a tool for the rest of the session.
SESSION_RULES = frozenset({CLAUDE_CODE})
# The Notification type by which a CLI says a tool waits for the person's permission, where the
# CLI offers no hook relaybay can answer it through (the terminal answers).
TERMINAL_PERMISSION_NOTICE = {GEMINI: "ToolPermission"}


def answer_permission(engine, *, allow, scope="once", tool="", message=""):
    """The hook answer that gives the CLI the decision (`message`: the model reads it with a denial)."""
    if allow:
        decision = {"behavior": "allow"}
        if scope == "session" and engine in SESSION_RULES and tool:
            decision["updatedPermissions"] = [
                {"type": "addRules", "rules": [{"toolName": tool}], "behavior": "allow", "destination": "session"}
            ]
    else:
        decision = {"behavior": "deny", "message": message}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
