"""A made-up agent CLI, "Pilot", declared in this one module as engines/ declares the real ones:
its own event names, its own answer shapes, its own edit tool. tests/test_fourth_engine.py
registers it and runs hooks through relaybay, to show that a new CLI is one module."""

from engines.base import Engine, Wake


class Pilot(Engine):
    name = "pilot"
    label = "Pilot"
    connect_name = "pilot"
    events = {
        "Begin": "SessionStart",
        "Ask": "UserPromptSubmit",
        "ToolAhead": "PreToolUse",
        "ToolDone": "PostToolUse",
        "Settle": "Stop",
        "Finish": "SessionEnd",
    }
    own_events = frozenset({"Begin", "Ask", "ToolAhead", "ToolDone", "Settle", "Finish"})
    context_events = frozenset({"UserPromptSubmit", "PreToolUse"})
    model_text = ("final_words",)
    edit_tools = {"save_file": ("target",)}
    wake = Wake.NEVER
    idle_note = "Pilot wakes for nobody: what is sent to you arrives at your next prompt."

    def context(self, name, text):
        return {"pilot": {"on": name, "say": text}}

    def continued(self, name, reason):
        return {"pilot": {"keep_going": reason}}

    def denied(self, name, reason):
        return {"pilot": {"refuse": True, "because": reason}}

    def permission(self, name, *, allow, scope="once", tool="", message=""):
        return {"pilot": {"permit": allow}}


ENGINE = Pilot()
