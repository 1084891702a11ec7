import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.management import CommandError, call_command

from sessions_app.actions import do_register_desktop
from sessions_app.models import Comment
from tests.live_server import MANAGE, REPO_ROOT, free_port, live_relaybay, server_env  # noqa: F401  (fixture)
from tests.scale_out import manage, query, wait_until

@pytest.mark.django_db
def test_it_writes_a_comment_to_the_session_by_name(capsys):
    desk = do_register_desktop(desktop_id="d-1", title="Builder", aliases=["b1"]).session
    call_command("comment", "  B1 ", "run", "the", "tests")
    comment = Comment.objects.get()
    assert comment.session == desk and comment.body == "run the tests"
    assert desk.handle in capsys.readouterr().out


@pytest.mark.django_db
def test_no_session_found_is_a_clear_error():
    with pytest.raises(CommandError, match='No session goes by "nobody"'):
        call_command("comment", "nobody", "hi")
    assert not Comment.objects.exists()


@pytest.mark.django_db
def test_several_sessions_found_is_a_clear_error_listing_them():
    do_register_desktop(desktop_id="d-1", title="twin")
    do_register_desktop(desktop_id="d-2", aliases=["twin"])
    with pytest.raises(CommandError, match="Several sessions go by") as error:
        call_command("comment", "twin", "hi")
    assert "d-1" in str(error.value) and "d-2" in str(error.value)
    assert not Comment.objects.exists()


def test_a_comment_from_the_command_wakes_a_session_waiting_on_the_running_server(live_relaybay):
    # The command is another process: on the embedded in-memory layer its wake reaches the
    # server's waiter only through the explicit relay (core.pings.relay_to_server).
    live_relaybay.start_session("hook-cmd-idle", "cmd-idle")
    live_relaybay.hook("UserPromptSubmit", "hook-cmd-idle", prompt="go")
    live_relaybay.hook("Stop", "hook-cmd-idle", stop_hook_active=False)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(live_relaybay.get, "/hooks/wait", session_id="hook-cmd-idle", timeout=60)
        wait_until(lambda: query(live_relaybay, "select waiter from sessions_app_hooklink where hook_session = 'hook-cmd-idle'")[0][0])
        manage(live_relaybay, "comment", "cmd-idle", "the owner wakes you")
        status, answer = waiting.result(timeout=30)  # woken, not the poll's 60 s timeout
    assert status == 200 and answer["status"] == "delivered"
    assert "the owner wakes you" in answer["text"]


def test_a_relay_that_fails_is_said_and_the_comment_is_still_written(live_relaybay):
    # relaybay is not at the address the command uses: the comment is saved, and the command
    # says that its live update and wake-up did not get through.
    live_relaybay.start_session("hook-cmd-elsewhere", "cmd-elsewhere")
    elsewhere = f"http://127.0.0.1:{free_port()}"
    environment = server_env(live_relaybay.process.relaybay_data, live_relaybay.token, RELAYBAY_URL=elsewhere, REDIS_URL="")
    done = subprocess.run(
        [sys.executable, str(MANAGE), "comment", "cmd-elsewhere", "nobody relays this"],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "written to" in done.stdout
    assert f"The live update and wake-up failed (relaybay at {elsewhere} did not take it" in done.stderr
    [(body,)] = query(live_relaybay, "select body from sessions_app_comment where body = 'nobody relays this'")
    assert body == "nobody relays this"
