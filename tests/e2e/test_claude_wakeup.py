"""The wake-up hook under the full default `claude_config`, with the real Claude Code CLI.

An interactive session sitting idle is woken when mail arrives; an unattended `claude -p`
run never waits for its waiter (the CLI would not exit before the waiter ends: 600 s by
default), unless it was configured as a headless worker (--wait-unattended, see
test_claude_comments.py).
"""

import contextlib
import os
from pathlib import Path

import pytest

from tests.e2e.claude_cli import start_interactive
from tests.e2e.model_server import ModelServer, text
from tests.e2e.relaybay_cli import manage, query, write_settings
from tests.e2e.test_claude_comments import wait_until, waiter_registered
from tests.live_server import live_relaybay  # noqa: F401  (fixture)


@pytest.fixture
def named(live_relaybay, request):
    name = f"wake-{request.node.name[-40:]}"
    status, _ = live_relaybay.post("/desktop", {"desktop_id": f"desk-{name}", "title": name})
    assert status == 200
    return name


@pytest.fixture
def default_settings(live_relaybay, named, tmp_path):
    """The config exactly as `claude_config --session NAME` prints it: wake-up included, wait 600 s."""
    return write_settings(live_relaybay, tmp_path / "settings.json", "--session", named)


def hook_processes(session_id):
    """Processes still running the hook client for this Claude session."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"relaybay-hook" in cmdline and f"CLAUDE_CODE_SESSION_ID={session_id}".encode() in environ:
            found.append(cmdline.replace(b"\0", b" ").decode())
    return found


@pytest.mark.embedded_only  # the hook client's own choice not to wait under `claude -p`
def test_a_p_turn_under_the_default_config_leaves_no_waiting_waiter(live_relaybay, model, claude, default_settings, named):
    model.add_steps(text("one turn, done"))

    # `claude` runs the CLI to its exit (with a 120 s bound, far below the 600 s wait).
    result = claude("do one thing", settings_file=default_settings)

    assert result["result"] == "one turn, done"
    session_id = result["session_id"]
    # The Stop hooks ran: the server recorded the Stop and the session's end ...
    names = [row[0] for row in query(live_relaybay, "select name from sessions_app_event where hook_session=? order by id", session_id)]
    assert "hook.Stop" in names and "hook.SessionEnd" in names
    # ... but no waiter ever asked the server to wait for this session, and none is left.
    log = live_relaybay.process.relaybay_server.log_path.read_text()  # daphne's access log
    assert f"/api/hooks/wait?session_id={session_id}" not in log
    assert "POST /api/hooks" in log
    [(waiter,)] = query(live_relaybay, "select waiter from sessions_app_hooklink where hook_session=?", session_id)
    assert waiter == ""
    assert hook_processes(session_id) == []


def test_an_interactive_session_under_the_default_config_is_woken_by_a_comment(live_relaybay, model, project, home, default_settings, named):
    model.add_steps(text("interactive, going idle"), text("woken in tmux"))

    with start_interactive(model_url=model.url, cwd=project, home=home, settings_file=default_settings) as session:
        session.send("start")
        session.wait_for_screen("interactive, going idle")
        wait_until(lambda: waiter_registered(live_relaybay, named))
        # No keystroke: the comment alone starts the next turn.
        manage(live_relaybay, "comment", named, "owner says tmux-wake-5150")
        session.wait_for_screen("woken in tmux", timeout=30)

        assert "owner says tmux-wake-5150" in model.request_texts()[1]
        assert session.exit()


def test_messages_wake_an_idle_interactive_session_three_times_then_only_the_owner_does(live_relaybay, model, project, home, default_settings, named):
    # docs/rules.md §4.8: the wake-up cap (3 by default) counts wakes by messages between two
    # owner actions; past it a message waits, and an owner comment still wakes the session.
    sender = f"{named}-peer"
    assert live_relaybay.post("/desktop", {"desktop_id": f"desk-{sender}", "title": sender})[0] == 200

    def message(body):
        status, answer = live_relaybay.post("/message_send", {"body": body, "to": named, "session": sender})
        assert status == 200, answer
        return answer

    model.add_steps(text("idle at first"), *(text(f"woken by message {k}") for k in (1, 2, 3)), text("woken by the owner"))
    with start_interactive(model_url=model.url, cwd=project, home=home, settings_file=default_settings) as session:
        session.send("start")
        session.wait_for_screen("idle at first")
        for k in (1, 2, 3):
            wait_until(lambda: waiter_registered(live_relaybay, named))
            message(f"agent wake {k} (cap-{k}17)")
            session.wait_for_screen(f"woken by message {k}", timeout=30)
        wait_until(lambda: waiter_registered(live_relaybay, named))
        fourth = message("agent wake 4 (cap-417)")
        assert "the wake-up cap allows" in fourth["status"]
        manage(live_relaybay, "comment", named, "owner says cap-owner-99")
        session.wait_for_screen("woken by the owner", timeout=30)
        shown = model.request_texts()
        assert session.exit()
    # Each of the first three messages woke a turn of its own; the fourth woke none: it first
    # reached the model beside the owner's comment, in the turn the comment woke.
    for k in (1, 2, 3):
        assert f"cap-{k}17" in shown[k]
    assert "cap-owner-99" in shown[4] and "cap-417" in shown[4]
    assert not any("cap-417" in text_ for text_ in shown[:4])
    # Each wake handed the delivery back as its turn's prompt: no event keeps the text (§4.7).
    prompts = [row[0] for row in query(live_relaybay, "select data from sessions_app_event where name = 'hook.UserPromptSubmit'")]
    assert len(prompts) >= 5
    assert not [data for data in prompts for k in (1, 2, 3, 4) if f"cap-{k}17" in data]


def test_one_broadcast_wakes_each_idle_interactive_session_of_the_folder(live_relaybay, project, tmp_path, named):
    # A broadcast asks for the waiting wake-up hooks of all its recipients at once
    # (sessions_app.feed.wake_sessions): each idle session is woken with its own message.
    names = [f"{named}-{k}" for k in (1, 2)]
    with contextlib.ExitStack() as stack:
        sessions = {}
        for name in names:
            model = stack.enter_context(ModelServer())
            model.add_steps(text(f"{name} idle"), text(f"{name} woken"))
            settings = write_settings(live_relaybay, tmp_path / f"{name}.json", "--session", name)
            session = stack.enter_context(
                start_interactive(model_url=model.url, cwd=project, home=tmp_path / f"home-{name}", settings_file=settings)
            )
            session.send("start")
            session.wait_for_screen(f"{name} idle")
            sessions[name] = (model, session)
        for name in names:
            wait_until(lambda name=name: waiter_registered(live_relaybay, name))
        status, answer = live_relaybay.post(
            "/message_broadcast", {"session": f"{named}-lead", "folder": str(project), "body": "stand-up now (bw-5150)"}
        )
        assert status == 200, answer
        assert {entry["to"]: entry["outcome"] for entry in answer["recipients"]} == {name: "delivering now" for name in names}
        for name, (model, session) in sessions.items():
            session.wait_for_screen(f"{name} woken", timeout=30)
            assert '"stand-up now (bw-5150)"' in model.request_texts()[1]
            assert session.exit()
