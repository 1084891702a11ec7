"""What the owner is told of a request, and what the model is told with relaybay's denials
(docs/rules.md §8). How each CLI is answered is its engine's (Engine.permission, engines/)."""

import json

import engines

DENIED_BY_OWNER = "The owner denied this tool call on relaybay."
NOBODY_ANSWERED = "relaybay: nobody answered this permission request within {seconds} s, so it is denied. Ask the owner, or go on without it."


def permission_answer(engine, *, allow, scope="once", tool="", message=""):
    """The hook answer of the owner's decision in the shape of the CLI `engine` names, a denial
    always with words."""
    message = message or (DENIED_BY_OWNER if not allow else "")
    return engines.of(engine).permission("PermissionRequest", allow=allow, scope=scope, tool=tool, message=message)


SUMMARY_MAX = 500
# The field of a tool's input that says what it would do, in the order looked for: a command,
# a file, an address, a search.
SUMMARY_FIELDS = ("command", "cmd", "file_path", "notebook_path", "path", "url", "query", "pattern", "prompt")


def summary_of(tool_input):
    """What a tool would do, in one line: its command, file or address, else its input as JSON."""
    if isinstance(tool_input, dict):
        for field in SUMMARY_FIELDS:
            value = tool_input.get(field)
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                value = " ".join(value)  # Codex's exec_command takes the command as words
            if isinstance(value, str) and value.strip():
                return _clip(value.strip())
    if tool_input in (None, "", {}):
        return ""
    return _clip(tool_input if isinstance(tool_input, str) else json.dumps(tool_input, ensure_ascii=False))


def question_of(tool_input):
    """The question a model asks the person (Claude Code's AskUserQuestion: `questions`, each
    with its `question`)."""
    if isinstance(tool_input, dict):
        questions = tool_input.get("questions")
        if isinstance(questions, list):
            asked = [q.get("question") for q in questions if isinstance(q, dict) and isinstance(q.get("question"), str)]
            if asked:
                return _clip(" / ".join(asked))
        if isinstance(tool_input.get("question"), str):
            return _clip(tool_input["question"])
    return summary_of(tool_input)


def _clip(text):
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1] + "…"
