"""Edit collisions and reservations between two real Claude Code sessions (docs/rules.md §7).

Two `claude -p` runs, each with its own scripted model server, HOME and `manage.py
claude_config --session NAME` file, work in one git checkout. Session A stays in its turn (its
model's next answer waits) while session B runs whole, so A is live when B edits. What each
model was sent proves what reached it: B's model is shown the warning naming A after its
Edit's result, A's model hears at its next hook that B is editing its file, and with A's
exclusive reservation (made with the real MCP tool) B's scripted Edit is denied and the file on
disk keeps its content.
"""

import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.claude_cli import parse_result, run_claude
from tests.e2e.model_server import ModelServer, text, tool
from tests.e2e.relaybay_cli import query, write_settings
from tests.e2e.test_claude_messages import mcp_answer, tool_result
from tests.live_server import live_relaybay  # noqa: F401  (fixture)

RESERVE = "mcp__relaybay__files_reserve"
TOOLS = "Bash Read Edit Write mcp__relaybay"
ORIGINAL = "def app():\n    return 'original'\n"


@dataclass
class Agent:
    name: str
    model: ModelServer
    home: Path
    settings: Path

    def run(self, cwd):
        completed = run_claude(
            "work on the app", model_url=self.model.url, cwd=cwd, home=self.home,
            settings_file=self.settings, mcp_config=self.settings, allowed_tools=TOOLS,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr[-3000:]
        return parse_result(completed)


@pytest.fixture
def checkout(tmp_path):
    """A git checkout with src/app.py, where both sessions work."""
    repo = tmp_path / "checkout"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text(ORIGINAL)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo.resolve()


@pytest.fixture
def agents(live_relaybay, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    made = []
    for key in ("a", "b"):
        root = tmp_path / key
        root.mkdir()
        settings = write_settings(live_relaybay, root / "settings.json", "--session", f"files-{key}-{suffix}", "--spool", str(root / "spool.jsonl"))
        made.append(Agent(f"files-{key}-{suffix}", ModelServer().start(), root / "home", settings))
    yield made
    for agent in made:
        agent.model.stop()


def b_edits(b, checkout, old, new):
    """B's scripted turn: read src/app.py, then edit it."""
    app = str(checkout / "src" / "app.py")
    b.model.add_steps(
        tool("Read", {"file_path": app}),
        tool("Edit", {"file_path": app, "old_string": old, "new_string": new}),
        text("edited"),
    )
    return b.run(checkout)


def test_b_is_warned_of_a_file_a_edited_and_a_hears_that_b_edits_it(agents, checkout):
    a, b = agents
    app = str(checkout / "src" / "app.py")
    finished = {}
    a.model.add_steps(
        tool("Read", {"file_path": app}),
        tool("Edit", {"file_path": app, "old_string": "original", "new_string": "from a"}),
        # A's turn waits here while B runs whole: A is live when B edits.
        text("my edit is done", before=lambda: finished.update(b=b_edits(b, checkout, "from a", "from b"))),
        text("noted"),
    )
    a.run(checkout)
    assert finished["b"]["result"] == "edited"
    # B's model was shown the warning with its Edit's result, naming A as message_send takes it.
    warned, _ = tool_result(b.model, "Edit")
    shown = "\n".join(b.model.request_texts())
    assert "PreToolUse:Edit hook additional context: relaybay: src/app.py (working tree " in shown
    assert f'"{a.name}" (S-' in shown and f'message_send(to="{a.name}")' in shown
    assert "from b" in (checkout / "src" / "app.py").read_text()  # a warning lets the edit happen
    # A heard at its next hook (its Stop) that B is editing the file it changed.
    heard = "\n".join(a.model.request_texts())
    assert f'session "{b.name}" is now editing src/app.py (working tree {checkout})' in heard
    assert warned  # the Edit ran and returned its result


def test_with_a_exclusive_reservation_b_s_edit_is_denied_and_the_file_is_untouched(agents, checkout, live_relaybay):
    a, b = agents
    finished = {}
    a.model.add_steps(
        tool(RESERVE, {"paths": ["src/*.py"], "reason": "moving app into a package"}),
        text("reserved", before=lambda: finished.update(b=b_edits(b, checkout, "original", "from b"))),
    )
    a.run(checkout)
    reserved = mcp_answer(a.model, RESERVE)
    assert [(r["path"], r["exclusive"], r["holder"]) for r in reserved["reservations"]] == [("src/*.py", True, a.name)]
    assert reserved["root"] == str(checkout)
    # The Edit did not run: the file on disk is as it was, and B's model was told why.
    assert (checkout / "src" / "app.py").read_text() == ORIGINAL
    denied, _ = tool_result(b.model, "Edit")
    assert f'reserved exclusively by another live session, "{a.name}"' in denied
    assert '"moving app into a package"' in denied and "The file is untouched" in denied
    [(event,)] = query(live_relaybay, "select name from sessions_app_event where name = 'file.denied'")
    assert event == "file.denied"
    # A's session ended with its run, and its reservation with it: B may edit now.
    b.model.requests.clear()
    b_edits(b, checkout, "original", "now from b")
    assert "now from b" in (checkout / "src" / "app.py").read_text()
