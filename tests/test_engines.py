"""What differs per agent CLI is declared once, in its engine (engines/, docs/rules.md §1.6):
the docs' table is written from the declarations, the hook client's waiters and the model's
choices agree with them, and no module outside engines/ branches on a CLI by name."""

import ast
import re
from pathlib import Path

import pytest

import engines
from engines import table
from engines.base import Wake
from relaybay_hook import client, wait
from sessions_app.models import Session

ROOT = Path(__file__).resolve().parent.parent
# Where relaybay's code may not name a CLI: every package but engines/ (where each is declared).
CHECKED = ["core", "sessions_app", "collisions", "approvals", "messaging", "mcp_server", "board", "install", "relaybay", "relaybay_hook"]


def test_the_docs_table_is_the_one_the_engines_declare():
    # Run `python -m engines.table --write` after changing an engine's declarations.
    text = table.DOC.read_text()
    assert table.with_table(text, table.render()) == text


def test_the_table_has_a_column_for_every_engine_and_a_row_for_each_declaration():
    rendered = table.render().splitlines()
    assert rendered[0] == "| | Claude Code | Codex | Gemini CLI |"
    assert len(rendered) == 2 + len(table.ROWS)
    assert all(line.count(" | ") == len(engines.ENGINES) for line in rendered[2:])


def test_the_hook_client_s_flags_and_waiters_are_the_engines():
    # The client is stdlib only and imports no engine: `--engine NAME` is an engine's name, which
    # its refusal at a start tells to connect again by (`manage.py connect NAME`); Claude Code's
    # hooks name none. Its waiters are the declarations written out.
    assert all(client.is_name(engine.name) for engine in engines.ENGINES)
    assert all(engine.connect_name == engine.name for engine in engines.ENGINES if engine is not engines.DEFAULT)
    assert set(wait.WAKERS) == {engine.name for engine in engines.ENGINES if engine.wake == Wake.WAITER}


def test_the_model_s_choices_are_the_engines():
    assert Session.Engine.choices == [(engine.name, engine.label) for engine in engines.ENGINES]


def test_every_engine_says_how_relaybay_handles_its_events():
    for engine in engines.ENGINES:
        for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "Stop"):
            assert engine.event_of(engine.name_of(event)) == event, (engine, event)
        assert engine.context_events <= {"UserPromptSubmit", "PreToolUse", "PostToolUse"}


def named_cli(path, names):
    """Where a module names a CLI: a string that is an engine's name, or a member of the model's
    Engine choices (`Session.Engine.CODEX`). The hook client's WAKERS, which the test above
    checks against the engines, is what it is; checked_modules leaves out the modules an
    engine or the client names as one CLI's (its connector, its waker)."""
    tree = ast.parse(path.read_text(), str(path))
    listed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "WAKERS" for t in node.targets):
            listed.update(id(n) for n in ast.walk(node.value))
    found = []
    for node in ast.walk(tree):
        if id(node) in listed:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "Engine" and node.attr.isupper():
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} Engine.{node.attr}")
    return found


def checked_modules():
    connectors = {f"install/connectors/{engine.connector}.py" for engine in engines.ENGINES}
    connectors |= {f"relaybay_hook/{module}.py" for _, module in wait.WAKERS.values()}
    for package in CHECKED:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            if "migrations" in path.parts or relative in connectors or relative == "sessions_app/models.py":
                continue
            yield path


def test_no_module_outside_engines_branches_on_a_cli_by_name():
    names = {engine.name for engine in engines.ENGINES}
    found = [where for path in checked_modules() for where in named_cli(path, names)]
    assert not found, f"ask the engine (engines.of(name), a hook's dialect.engine) instead: {found}"


def test_no_template_compares_a_session_s_cli():
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "templates").rglob("*.html") if re.search(r"engine\s*[!=]=", p.read_text())]
    assert not found


@pytest.mark.parametrize(
    "code",
    [
        "def f(session):\n    return session.engine == 'gemini'\n",
        "from sessions_app.models import Session\nWAKEABLE = {Session.Engine.CODEX}\n",
        "ENGINE_NAMES = ('codex',)\n",
    ],
)
def test_the_check_finds_a_branch_on_a_cli(tmp_path, code, monkeypatch):
    monkeypatch.setattr("tests.test_engines.ROOT", tmp_path)
    module = tmp_path / "m.py"
    module.write_text(code)
    assert named_cli(module, {"gemini", "codex"})


def test_the_only_modules_that_name_gemini_are_its_engine_the_engines_list_and_the_model_s_choices():
    # Code (the benchmarks and the board's stylesheet included); the docs and the tests may speak of it.
    named = {
        str(p.relative_to(ROOT))
        for package in [*CHECKED, "engines", "bench", "static", "templates"]
        for p in (ROOT / package).rglob("*")
        if p.suffix in (".py", ".css", ".js", ".html") and "migrations" not in p.parts and "gemini" in p.read_text().lower()
    }
    assert named == {"engines/gemini.py", "engines/__init__.py", "sessions_app/models.py"}


def test_each_engine_answers_a_permission_request_its_cli_s_way():
    from engines import claude_code, codex, gemini

    for engine in (claude_code.ENGINE, codex.ENGINE):
        answer = engine.permission("PermissionRequest", allow=False, message="the owner said no")
        assert answer == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "the owner said no"}}}
        assert engine.permission("PermissionRequest", allow=True)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    # Claude Code takes a rule for the rest of the session; Codex does not.
    for_session = claude_code.ENGINE.permission("PermissionRequest", allow=True, scope="session", tool="Bash")
    assert for_session["hookSpecificOutput"]["decision"]["updatedPermissions"][0]["rules"] == [{"toolName": "Bash"}]
    assert "updatedPermissions" not in codex.ENGINE.permission("PermissionRequest", allow=True, scope="session", tool="Bash")["hookSpecificOutput"]["decision"]
    # Gemini CLI asks in its terminal only: relaybay has no answer to give.
    assert gemini.ENGINE.permission("PermissionRequest", allow=True) is None
