"""Needs you with the real Gemini CLI 0.61.0 (docs/rules.md §1.6, §8): no Gemini hook can answer a
permission request, but its Notification (`ToolPermission`) says a tool waits for the person. The
interactive CLI under tmux, connected with `manage.py connect gemini`: its shell command waiting
at its own dialog is on the board as needing the owner, to be answered in the terminal; once the
person allows it there, the session's next hook settles it as answered in the terminal."""

import shlex
import tempfile
import time

import pytest

from tests.e2e.agent_clis import GEMINI_BIN, Gemini, binary, manage_as
from tests.e2e.claude_cli import InteractiveClaude
from tests.e2e.cli_models import GeminiServer, text
from tests.e2e.model_server import tool
from tests.e2e.test_claude_approvals import owner, pending, settled
from tests.e2e.test_claude_comments import wait_until
from tests.live_server import LiveRelaybay, start_relaybay, stop_relaybay

pytestmark = pytest.mark.embedded_only  # Gemini's notice in; the path it reaches runs on both under Claude Code
DIALOG = "Allow execution of [Shell]?"


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


@pytest.fixture
def model():
    server = GeminiServer().start()
    yield server
    server.stop()


@pytest.fixture
def terminal(relaybay, model, tmp_path):
    cli = Gemini(tmp_path / "home", model.url)
    manage_as(relaybay, cli.home, "connect", "gemini")
    work = tmp_path / "work"
    work.mkdir()
    command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in cli.env().items()), binary(GEMINI_BIN)])
    session = InteractiveClaude(tempfile.mkdtemp(prefix="relaybay-tmux-"), name="gemini")
    session.tmux("-f", "/dev/null", "new-session", "-d", "-s", session.name, "-x", "200", "-y", "50", "-c", str(work), command,
                 ";", "set-option", "-t", session.name, "remain-on-exit", "on")  # fmt: skip
    try:
        session.wait_for_screen("Type your message", timeout=60)
        yield session, work
    finally:
        session.tmux("kill-server", check=False)


def test_a_gemini_tool_waiting_for_permission_needs_you_and_is_answered_in_the_terminal(relaybay, model, terminal):
    session, work = terminal
    made = work / "made.txt"
    model.add_steps(tool("Bash", {"command": f"touch {made}"}), text("gemini made it"))
    session.tmux("send-keys", "-t", session.name, "-l", "make the file")
    time.sleep(0.5)  # a burst of keys is a paste, where Enter is a new line
    session.tmux("send-keys", "-t", session.name, "Enter")
    session.wait_for_screen(DIALOG, timeout=60)
    request = pending(relaybay)
    assert (request["engine"], request["kind"], request["summary"], request["answerable"]) == ("gemini", "permission", f"touch {made}", False)
    status, body = owner(relaybay, "POST", f"/approvals/{request['id']}", {"decision": "allow"})
    assert status == 409 and "only in its terminal" in body["detail"]
    session.tmux("send-keys", "-t", session.name, "Enter")  # "1. Allow once"
    wait_until(lambda: made.exists(), timeout=60)
    wait_until(lambda: (settled(relaybay, request["id"]) or {}).get("state") == "answered_elsewhere", timeout=60)
