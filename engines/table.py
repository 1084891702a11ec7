"""docs/rules.md §1.6's table of what each CLI does, written from the engines' declarations:
what the docs say of a CLI is what its module declares (tests/test_engines.py compares them).

    python -m engines.table           print the table
    python -m engines.table --write   put it in docs/rules.md, between its two markers
"""

import sys
from pathlib import Path

from . import ENGINES
from .base import Wake

DOC = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
START = "<!-- The engines' table: written by `python -m engines.table --write` from engines/. -->"
END = "<!-- End of the engines' table. -->"
WOKEN = {Wake.HOOK: "yes, the wake-up hook", Wake.WAITER: "yes, while the waiter its Stop hook leaves runs", Wake.NEVER: "no: hooks run only in a turn"}


def _note(engine, row):
    return engine.notes.get(row, "")


def _events(engine):
    renamed = [f"{name} as {handled}" for name, handled in engine.events.items() if name != handled]
    return ", ".join(renamed) if renamed else "relaybay's own names"


def _at_tools(engine):
    names = [engine.name_of(event) for event in ("PreToolUse", "PostToolUse") if engine.delivers_context(event) and engine.name_of(event)]
    return ", ".join(names)


def _edits(engine):
    tools = ", ".join(f"`{tool}`" for tool in engine.edit_tools)
    if engine.patch_tools:
        tools += ", each file its patch names"
    warned = engine.delivers_context("PreToolUse")
    return tools + (": warned, denied by a reservation" if warned else ": denied by a reservation, noted; not warned")


ROWS = [
    ("its events", _events),
    ("identity at the start (§2.2)", lambda e: f"{e.name_of('SessionStart')} {e.context_reaches}"),
    ("comments and messages at the next prompt", lambda e: e.name_of("UserPromptSubmit")),
    ("… at a tool call", _at_tools),
    ("the turn goes on with what waits (§2.5, 3 a turn)", lambda e: f"{e.name_of('Stop')} {e.stop_continues}"),
    ("woken while idle (§2.2)", lambda e: WOKEN[e.wake]),
    ("MCP tools (§4.10), who calls", lambda e: f"{e.caller_note}, **{e.caller}**"),
    ("relaybay's http server directly, across a restart (§4.10)", lambda e: e.restart_note or "—"),
    ("a running process (§1.5)", lambda e: e.process_note),
    ("edit collisions (§7.1)", _edits),
    ("a permission request", lambda e: e.permission_note),
    ("native messages (§4.9)", lambda e: "recorded" if e.native_messages else "—"),
    ("the hook client's flag; connected by", lambda e: f"`--engine {e.name}`; `manage.py connect {e.connect_name}`"),
]
# The key of each row in an engine's `notes` (words added to its cell).
NOTE_KEYS = {
    "identity at the start (§2.2)": "start",
    "comments and messages at the next prompt": "prompt",
    "… at a tool call": "tool",
    "the turn goes on with what waits (§2.5, 3 a turn)": "stop",
    "woken while idle (§2.2)": "wake",
    "edit collisions (§7.1)": "edits",
    "the hook client's flag; connected by": "flag",
}


def render(engines=None):
    """The table, one column per engine."""
    engines = ENGINES if engines is None else engines
    lines = ["| | " + " | ".join(e.label for e in engines) + " |", "|---" * (len(engines) + 1) + "|"]
    for title, cell in ROWS:
        cells = [cell(e) + _note(e, NOTE_KEYS.get(title, "")) for e in engines]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def with_table(text, table):
    """The document's text with the table between its markers replaced."""
    head, start, rest = text.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"{DOC} has no {START!r} … {END!r}")
    return f"{head}{START}\n{table}\n{END}{tail}"


def main(argv):
    table = render()
    if "--write" in argv:
        DOC.write_text(with_table(DOC.read_text(), table))
    else:
        print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
