"""The owner's comments reach a real Claude Code session through relaybay's hooks.

Each test runs the pinned Claude Code CLI under the config `manage.py claude_config` prints,
against the scripted model server; the proof of delivery is what the model was sent.
"""

import shlex
import sys
import threading
import time

import pytest

from tests.e2e.claude_cli import parse_result, run_claude
from tests.e2e.model_server import text, tool
from tests.e2e.relaybay_cli import manage, query, write_settings
from tests.live_server import MANAGE, live_relaybay, server_env  # noqa: F401  (fixture)

# PostToolUse runs only after SendMessage (claude_config.MATCHERS): a Bash call reports none.
EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd"]


@pytest.fixture
def named(live_relaybay, request):
    """A desktop row the Claude session will name itself as, so comments can wait for it."""
    name = f"agent-{request.node.name[-40:]}"
    status, _ = live_relaybay.post("/desktop", {"desktop_id": f"desk-{name}", "title": name})
    assert status == 200
    return name


def headless_settings(live, named, tmp_path, wait):
    """A headless worker's config: the wake-up hook waits under `claude -p` too, `wait` seconds
    (`claude -p` exits when the wait ends)."""
    return write_settings(
        live, tmp_path / "settings.json", "--session", named, "--wait", str(wait), "--wait-unattended", "--spool", str(tmp_path / "spool.jsonl")
    )


@pytest.fixture
def settings_file(live_relaybay, named, tmp_path):
    # Nothing is to wake these sessions: their wait is short, as test_claude_messages.py's.
    return headless_settings(live_relaybay, named, tmp_path, wait=1)


def comment(live, name, marker):
    manage(live, "comment", name, f"owner says {marker}")


def test_a_session_appears_with_all_its_hook_events(live_relaybay, model, claude, settings_file, named):
    model.add_steps(tool("Bash", {"command": "echo hi"}), text("all done"))
    result = claude("do a thing", settings_file=settings_file)
    hook_id = result["session_id"]
    names = [row[0] for row in query(live_relaybay, "select name from sessions_app_event where hook_session=? and name like 'hook.%' order by id", hook_id)]
    assert [n for n in names if n.removeprefix("hook.") in EVENTS] == [f"hook.{e}" for e in EVENTS]
    assert "hook.PostToolUse" not in names
    exact, state = query(live_relaybay, "select exact, state from sessions_app_hooklink where hook_session=?", hook_id)[0]
    assert exact == 1 and state == "ended"
    listed = live_relaybay.get("/sessions_list")[1]["sessions"]
    assert any(s["name"] == named for s in listed)


def test_a_comment_written_before_the_prompt_is_beside_the_prompt(live_relaybay, model, claude, settings_file, named):
    comment(live_relaybay, named, "before-prompt-4401")
    model.add_steps(text("noted"))
    claude("what is new?", settings_file=settings_file)
    first = model.main_requests()[0]
    shown = "\n".join(model.request_texts()[model.requests.index(first)].splitlines())
    assert "what is new?" in shown
    assert "UserPromptSubmit hook additional context" in shown
    assert "owner says before-prompt-4401" in shown


def test_a_comment_written_while_a_tool_runs_arrives_at_the_next_hook_after_its_result(live_relaybay, model, claude, settings_file, named, tmp_path):
    # The tool itself writes the comment, so it is written exactly while the tool runs; the
    # marker is made by shell arithmetic so the model's own command line does not contain it.
    writer = f"{manage_command(live_relaybay)} comment {named} \"owner says during-tool-$((5500 + 7))\" && echo tool-finished"
    model.add_steps(tool("Bash", {"command": writer}), text("ok"), text("seen"))
    claude("run it", settings_file=settings_file)
    texts = model.request_texts()
    # No hook runs after a Bash call (PostToolUse is for SendMessage): the turn's Stop carries it.
    assert "owner says during-tool-5507" not in texts[0] + texts[1]
    after = texts[2]
    assert after.index("tool-finished") < after.index("Stop hook feedback:") < after.index("owner says during-tool-5507")


def test_a_comment_pending_at_stop_is_a_stop_block_and_the_model_continues(live_relaybay, model, claude, settings_file, named):
    model.add_steps(
        text("first answer", before=lambda: comment(live_relaybay, named, "at-stop-6602")),
        text("continued after the comment"),
    )
    result = claude("answer me", settings_file=settings_file)
    assert result["result"] == "continued after the comment"
    second = model.request_texts()[1]
    assert "Stop hook feedback:" in second
    assert "owner says at-stop-6602" in second
    assert "from the owner" in second


def waiter_registered(live, name):
    """The server shows the named session idle with its wake-up hook waiting."""
    rows = query(
        live,
        "select l.state, l.waiter from sessions_app_hooklink l join sessions_app_session s on s.id = l.session_id where s.title = ?",
        name,
    )
    return any(state == "idle" and waiter for state, waiter in rows)


def wait_until(condition, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def test_an_idle_session_with_the_wake_up_hook_is_woken_by_a_new_comment(live_relaybay, model, claude, named, tmp_path):
    settings_file = headless_settings(live_relaybay, named, tmp_path, wait=8)
    model.add_steps(text("going idle"), text("woken and working"))

    def write_when_idle():
        wait_until(lambda: waiter_registered(live_relaybay, named))
        comment(live_relaybay, named, "wake-7703")

    writer = threading.Thread(target=write_when_idle)
    writer.start()
    result = claude("start", settings_file=settings_file)
    writer.join()
    assert result["result"] == "woken and working"
    woken = model.request_texts()[1]
    assert "owner says wake-7703" in woken
    # Claude Code repeats the wake-up hook's command line to the model: short, and free of
    # configuration (no address, token, interpreter or file paths).
    assert "Stop hook feedback:\n[$RELAYBAY_HOOK wait]: " in woken
    assert live_relaybay.token not in model.all_text()
    assert live_relaybay.url not in model.all_text()


def manage_command(live):
    """A shell command line running manage.py against the live server."""
    server = server_env(live.process.relaybay_data, live.token, RELAYBAY_URL=live.url)
    # The server's own services too (its PostgreSQL database and Redis prefix on the
    # scale-out pass; empty, meaning the embedded default, otherwise).
    keys = ("RELAYBAY_DATA", "RELAYBAY_TOKEN", "RELAYBAY_URL", "DATABASE_URL", "REDIS_URL", "RELAYBAY_REDIS_PREFIX")
    env = " ".join(f"{key}={shlex.quote(server.get(key, ''))}" for key in keys)
    return f"{env} {shlex.quote(sys.executable)} {shlex.quote(str(MANAGE))}"
