"""An idle Codex session is woken when mail arrives (docs/rules.md §1.6): the real Codex CLI's TUI
under tmux, connected with `manage.py connect codex --cli …` and its hooks trusted the way a
person trusts them ("Hooks need review" → "Trust all and continue"). Its Stop hook leaves a
waiter behind, which hands a comment to `codex queue … --resume`: Codex starts a turn with it,
with nobody typing."""

import uuid

import pytest

from tests.e2e.agent_clis import CODEX_BIN, Codex, manage_as, start_codex_tui, stop_codex_tui, type_into_codex
from tests.e2e.cli_models import ResponsesServer, text
from tests.e2e.relaybay_cli import manage, query
from tests.e2e.test_claude_comments import wait_until
from tests.live_server import LiveRelaybay, start_relaybay, stop_relaybay


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


def waiting(live, folder):
    rows = query(live, "select l.waiter from sessions_app_hooklink l where l.cwd = ? and l.state = 'idle'", str(folder))
    return bool(rows and rows[0][0])


def test_an_idle_codex_session_is_woken_by_a_comment_and_a_message(relaybay, tmp_path):
    folder = tmp_path / "work" / f"shop{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    with ResponsesServer() as model:
        codex = Codex(tmp_path / "home", model.url)
        said = manage_as(relaybay, codex.home, "connect", "codex", "--cli", str(CODEX_BIN), codex_home=codex.codex_home).stdout
        assert "is woken when mail arrives" in said, said
        session = start_codex_tui(codex, folder)
        try:
            model.add_steps(text("codex is idle now"))
            type_into_codex(session, "start")
            session.wait_for_screen("codex is idle now", timeout=60)
            wait_until(lambda: waiting(relaybay, folder), timeout=30)
            # The sender is told the truth: it is being woken.
            name = folder.name
            model.add_steps(text("codex woke up"))
            said = manage(relaybay, "comment", name, "owner-wakes-codex-8181").stdout
            assert "being woken" in said, said
            model.wait_for_text("owner-wakes-codex-8181", timeout=60)
            session.wait_for_screen("codex woke up", timeout=60)
            [(delivered_by,)] = query(relaybay, "select delivered_by from sessions_app_comment")
            assert delivered_by.startswith("wake-up via ")
            # Idle again, with a new waiter: a message from another session wakes it too.
            wait_until(lambda: waiting(relaybay, folder), timeout=30)
            model.add_steps(text("codex read the message"))
            status, answer = relaybay.post("/message_send", {"to": name, "body": "a-message-wakes-codex-9292", "session": "someone"})
            assert status == 200 and "being woken" in answer["status"], answer
            model.wait_for_text("a-message-wakes-codex-9292", timeout=60)
        finally:
            stop_codex_tui(codex, session)
