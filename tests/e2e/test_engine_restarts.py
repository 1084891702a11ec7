"""relaybay restarted under running Codex CLI and Gemini CLI sessions (docs/rules.md §1.6): each
TUI under tmux, connected with `manage.py connect codex|gemini`, keeps relaybay's tools with
nobody touching its MCP settings; a send while relaybay is down is a tool error saying so, and
the next send after it is back is stored, from the verified sender."""

import json
import shlex
import tempfile
import time
import uuid

import pytest

from tests.e2e.agent_clis import CODEX_BIN, GEMINI_BIN, Codex, Gemini, binary, manage_as, start_codex_tui, stop_codex_tui, type_into_codex
from tests.e2e.claude_cli import InteractiveClaude
from tests.e2e.cli_models import GeminiServer, ResponsesServer, text
from tests.e2e.model_server import tool
from tests.e2e.relaybay_cli import query
from tests.e2e.test_relaybay_restarts import DOWN_SECONDS, NOT_RUNNING
from tests.live_server import LiveRelaybay, restart_relaybay, start_relaybay, stop_relaybay

pytestmark = pytest.mark.embedded_only
SEND = "mcp__relaybay__message_send"


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    live.start_session("hook-inbox", name="inbox")
    yield live
    stop_relaybay(live.process)


def sent_by(live, body):
    """(sender's engine, verified) of the stored message `body`, or None."""
    rows = query(
        live,
        "select s.engine, m.sender_verified from session_message m join sessions_app_session s on s.id = m.sender_id where m.body = ?",
        body,
    )
    return rows[0] if rows else None


def restart_under(live, model, say, wait_for_text):
    """Stop relaybay past Claude Code's reconnect window, send while it is down, start it, send again."""
    stop_relaybay(live.process)
    time.sleep(DOWN_SECONDS)
    model.add_steps(tool(SEND, {"to": "inbox", "body": "while-down-4141"}), text("tried while down"))
    say("send while relaybay is down")
    wait_for_text("tried while down")
    down_request = model.request_texts()[-1]
    live.process = restart_relaybay(live.process)
    model.add_steps(tool(SEND, {"to": "inbox", "body": "after-restart-5252"}), text("sent after restart"))
    say("send again")
    wait_for_text("sent after restart")
    return down_request, model.request_texts()[-1]


def test_a_codex_tui_session_keeps_relaybays_tools_across_a_restart(relaybay, tmp_path):
    folder = tmp_path / "work" / f"cx{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    with ResponsesServer() as model:
        codex = Codex(tmp_path / "home", model.url)
        manage_as(relaybay, codex.home, "connect", "codex", codex_home=codex.codex_home)
        session = start_codex_tui(codex, folder)
        try:
            model.add_steps(text("codex is idle"))
            type_into_codex(session, "start")
            session.wait_for_screen("codex is idle", timeout=60)
            down, after = restart_under(relaybay, model, lambda said: type_into_codex(session, said), lambda shown: session.wait_for_screen(shown, timeout=90))
        finally:
            stop_codex_tui(codex, session)
    assert sent_by(relaybay, "after-restart-5252") == ("codex", True), after[-1500:]
    assert NOT_RUNNING + relaybay.url in down and "your message was not sent" in down, down[-2000:]
    assert sent_by(relaybay, "while-down-4141") is None


def start_gemini_tui(gemini, cwd, ready_timeout=60.0):
    command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in gemini.env().items()), binary(GEMINI_BIN)])
    session = InteractiveClaude(tempfile.mkdtemp(prefix="relaybay-tmux-"), name="gemini")
    session.tmux("-f", "/dev/null", "new-session", "-d", "-s", session.name, "-x", "200", "-y", "50", "-c", str(cwd), command,
                 ";", "set-option", "-t", session.name, "remain-on-exit", "on")  # fmt: skip
    try:
        session.wait_for_screen("Type your message", timeout=ready_timeout)
    except BaseException:
        session.close()
        raise
    return session


def type_into_gemini(session, said):
    """Type a prompt and send it. Keys that come at once are a paste to Gemini's input, where an
    Enter can be taken as part of it: Enter again while the prompt still waits in the input."""
    session.tmux("send-keys", "-t", session.name, "-l", said)
    for _ in range(5):
        time.sleep(1.0)
        session.tmux("send-keys", "-t", session.name, "Enter")
        time.sleep(1.0)
        if f"> {said}" not in session.screen():
            return


def test_a_gemini_tui_session_keeps_relaybays_tools_across_a_restart(relaybay, tmp_path):
    folder = tmp_path / "work" / f"gm{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    with GeminiServer() as model:
        gemini = Gemini(tmp_path / "home", model.url)
        manage_as(relaybay, gemini.home, "connect", "gemini")
        with start_gemini_tui(gemini, folder) as session:
            model.add_steps(text("gemini is idle"))
            type_into_gemini(session, "start")
            session.wait_for_screen("gemini is idle", timeout=60)
            down, after = restart_under(relaybay, model, lambda said: type_into_gemini(session, said), lambda shown: session.wait_for_screen(shown, timeout=90))
    assert sent_by(relaybay, "after-restart-5252") == ("gemini", True), after[-1500:]
    assert NOT_RUNNING + relaybay.url in down and "your message was not sent" in down, down[-2000:]
    assert sent_by(relaybay, "while-down-4141") is None
