"""An idle Codex session is woken when mail arrives (docs/rules.md §1.6): the real Codex CLI's TUI
under tmux, connected with `manage.py connect codex --cli …` and its hooks trusted the way a
person trusts them ("Hooks need review" → "Trust all and continue"). Its Stop hook leaves a
waiter behind, which wakes the session with `codex queue … --message NUDGE --resume`, a fixed
prompt: Codex starts a turn, with nobody typing, and that turn's UserPromptSubmit hook delivers
the mail. No message text is on the command line of any process meanwhile."""

import os
import threading
import tomllib
import uuid

import pytest

from relaybay_hook.codex_wake import NUDGE
from tests.e2e.agent_clis import CODEX_BIN, Codex, binary, manage_as, start_codex_tui, stop_codex_tui, type_into_codex
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


class CommandLines:
    """Every process's command line, read from /proc as often as the machine allows, while the
    test runs: those holding one of `texts`."""

    def __init__(self, *texts):
        self.texts = [text.encode() for text in texts]
        self.found = []
        self.seen = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.scan, daemon=True)

    def scan(self):
        while not self.done.is_set():
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        line = f.read()
                except OSError:
                    continue
                self.seen += 1
                if any(text in line for text in self.texts) and b"manage.py" not in line:  # the test's own sender
                    self.found.append(line)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join(10)


def logged_codex(folder):
    """A `codex` that writes each command line it is run with to a file, then runs the real one:
    what the waiter runs, whole."""
    log = folder / "codex-command-lines"
    wrapper = folder / "codex"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" >> {log}\necho >> {log}\nexec {binary(CODEX_BIN)} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def test_an_idle_codex_session_is_woken_with_a_fixed_prompt_and_gets_its_comment_and_messages(relaybay, tmp_path):
    folder = tmp_path / "work" / f"shop{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    codex_cli, command_lines = logged_codex(tmp_path)
    texts = ("owner-wakes-codex-8181", "a-message-wakes-codex-9292", "--dash-wakes-codex-7373")
    with ResponsesServer() as model, CommandLines(*texts) as scanned:
        codex = Codex(tmp_path / "home", model.url)
        said = manage_as(relaybay, codex.home, "connect", "codex", "--cli", str(codex_cli), codex_home=codex.codex_home).stdout
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
            said = manage(relaybay, "comment", name, texts[0]).stdout
            assert "being woken" in said, said
            model.wait_for_text(texts[0], timeout=60)
            session.wait_for_screen("codex woke up", timeout=60)
            [(delivered_by,)] = query(relaybay, "select delivered_by from sessions_app_comment")
            assert delivered_by.startswith("UserPromptSubmit via ")
            # Idle again, with a new waiter: messages from another session wake it too, one
            # starting with "-" as well (no command line parses it).
            for body in texts[1:]:
                wait_until(lambda: waiting(relaybay, folder), timeout=30)
                model.add_steps(text("codex read the message"))
                status, answer = relaybay.post("/message_send", {"to": name, "body": body, "session": "someone"})
                assert status == 200 and "being woken" in answer["status"], answer
                model.wait_for_text(body, timeout=60)
        finally:
            stop_codex_tui(codex, session)
    queued = [line.split(b"\0") for line in command_lines.read_bytes().split(b"\n") if b"queue" in line]
    assert len(queued) == 3 and all(NUDGE.encode() in args for args in queued), queued
    assert scanned.seen and scanned.found == []
    # Codex wrote its trust in the hooks into config.toml: disconnect takes out relaybay's parts
    # and keeps that, and no file under HOME holds the token.
    config = codex.codex_home / "config.toml"
    trusted = tomllib.loads(config.read_text())
    manage_as(relaybay, codex.home, "disconnect", "codex", codex_home=codex.codex_home)
    del trusted["mcp_servers"]["relaybay"]
    if not trusted["mcp_servers"]:
        del trusted["mcp_servers"]
    assert tomllib.loads(config.read_text()) == trusted
    assert not [p for p in codex.home.rglob("*") if p.is_file() and relaybay.token.encode() in p.read_bytes()]
