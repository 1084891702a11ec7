"""Sessions connected by the plugin, as people start them: `manage.py connect claude` once in a
throwaway HOME, then plain `claude` in any folder — `-p`, and interactive under tmux.

Each session has its own scripted model server, so text in its requests that the test never
gave that model can only have come through relaybay.
"""

import json
import subprocess
import sys
import time
import uuid

import pytest

from tests.e2e.claude_cli import claude_bin, claude_env, parse_result, prepare_home, start_interactive
from tests.e2e.model_server import ModelServer, text, tool
from tests.e2e.relaybay_cli import manage, query
from tests.e2e.test_claude_comments import wait_until
from tests.e2e.test_plain_sessions import row_of_folder, waiting
from tests.live_server import MANAGE, REPO_ROOT, LiveRelaybay, restart_relaybay, server_env, start_relaybay, stop_relaybay

# Once, on the embedded pass: the plugin is a way to connect, its hooks and MCP calls reach the
# same paths as a `claude_config` session's (tests/e2e/test_plain_sessions.py, on both databases).
pytestmark = pytest.mark.embedded_only
PREFIX = "mcp__plugin_relaybay_relaybay__"
TOOLS = "Bash mcp__plugin_relaybay_relaybay"


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


@pytest.fixture
def home(relaybay, tmp_path):
    """A person's HOME, connected once for every session."""
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, str(MANAGE), "connect", "claude", "--url", relaybay.url, "--cli", claude_bin()],
        cwd=REPO_ROOT, env={**server_env(relaybay.process.relaybay_data, relaybay.token), "HOME": str(home)},
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return home


def folder(tmp_path, name):
    path = tmp_path / "work" / f"{name}{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True)
    return path


def claude_p(model, home, cwd, prompt="go"):
    done = subprocess.run(
        [claude_bin(), "-p", prompt, "--output-format", "json", "--allowedTools", TOOLS],
        cwd=cwd, env=claude_env(model.url, home, cwd=cwd), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return parse_result(done)


def test_plain_claude_p_in_any_folder_is_on_the_board_with_relaybay_tools_and_a_proven_send(relaybay, home, tmp_path):
    api, web = folder(tmp_path, "api"), folder(tmp_path, "web")
    with ModelServer() as web_model, ModelServer() as api_model:
        web_model.add_steps(text("web started"))
        claude_p(web_model, home, web)
        web_name, exact, *_ = row_of_folder_any(relaybay, web)
        assert (web_name, bool(exact)) == (web.name, True)

        api_model.add_steps(tool(PREFIX + "message_send", {"to": web_name, "body": "plugin-hello-5151"}), text("api sent it"))
        claude_p(api_model, home, api)
        # The tools are offered deferred: their names, for ToolSearch to load.
        first = json.dumps(api_model.main_requests()[0])
        assert PREFIX + "message_send" in first and PREFIX + "sessions_list" in first
        result = api_model.main_requests()[1]
        assert "NOT verified" not in json.dumps(result) and "plugin-hello-5151" not in query_events(relaybay)
        [(verified,)] = query(relaybay, "select sender_verified from session_message where body like ?", "%plugin-hello-5151%")
        assert bool(verified)

        # The recipient's model is shown the message at its next prompt.
        web_model.add_steps(text("web read it"))
        claude_p(web_model, home, web, prompt="anything new?")
        assert "plugin-hello-5151" in web_model.all_text()


def row_of_folder_any(live, path):
    """(title, link exact) of the session started in `path`, live or ended (a -p run ends)."""
    rows = query(
        live,
        "select s.title, l.exact from sessions_app_hooklink l join sessions_app_session s on s.id = l.session_id where l.cwd = ?",
        str(path),
    )
    assert rows, f"no session of {path} on the board"
    return rows[0]


def query_events(live):
    return json.dumps(query(live, "select * from sessions_app_event"), default=str)


def test_an_idle_interactive_session_under_the_plugin_is_woken_by_a_comment(relaybay, home, tmp_path):
    work = folder(tmp_path, "idle")
    prepare_home(home, work)
    with ModelServer() as model:
        model.add_steps(text("idle under the plugin"))
        with start_interactive(model_url=model.url, cwd=work, home=home, allowed_tools=TOOLS) as session:
            session.send("start")
            session.wait_for_screen("idle under the plugin", timeout=60)
            wait_until(lambda: waiting(relaybay, work), timeout=30)
            model.add_steps(text("woken by the owner"))
            said = manage(relaybay, "comment", row_of_folder(relaybay, work)[0], "plugin-comment-3131").stdout
            assert "being woken" in said, said
            model.wait_for_text("plugin-comment-3131", timeout=30)
            session.wait_for_screen("woken by the owner", timeout=30)


def test_with_relaybay_down_a_session_starts_at_once_spools_its_events_and_the_person_is_told_once(relaybay, home, tmp_path):
    work = folder(tmp_path, "offline")
    prepare_home(home, work)
    stop_relaybay(relaybay.process)
    with ModelServer() as model:
        model.add_steps(text("working offline"), text("still offline"))
        with start_interactive(model_url=model.url, cwd=work, home=home, allowed_tools=TOOLS) as session:
            session.wait_for_screen(f"relaybay is not reachable at {relaybay.url}", timeout=60)
            session.send("go on")
            session.wait_for_screen("working offline", timeout=60)
            session.send("and again")
            shown = session.wait_for_screen("still offline", timeout=60)
            assert shown.count("relaybay is not reachable") == 1
            assert session.exit()
    spool = home / ".relaybay" / "spool.jsonl"
    assert spool.exists() and spool.stat().st_size > 0
    # Back up: the next hook of any session replays the spool, and the session is on the board.
    relaybay.process = restart_relaybay(relaybay.process)
    with ModelServer() as model:
        model.add_steps(text("online"))
        claude_p(model, home, folder(tmp_path, "later"))
    deadline = time.monotonic() + 30
    while not query(relaybay, "select 1 from sessions_app_hooklink where cwd = ?", str(work)):
        assert time.monotonic() < deadline, "the spooled session never reached the board"
        time.sleep(0.2)


def test_a_session_named_by_a_claude_config_file_is_reported_once_though_the_plugin_is_connected(relaybay, home, tmp_path):
    work = folder(tmp_path, "solo")
    settings = tmp_path / "solo.json"
    settings.write_text(manage(relaybay, "claude_config", "--url", relaybay.url, "--session", "solo-worker").stdout)
    with ModelServer() as model:
        model.add_steps(tool("Bash", {"command": "true"}), text("solo done"))
        done = subprocess.run(
            [claude_bin(), "-p", "go", "--output-format", "json", "--allowedTools", "Bash", "--settings", str(settings)],
            cwd=work, env=claude_env(model.url, home, cwd=work), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    # One session, under its file's name, and each event once: the plugin's hooks stood aside.
    assert query(relaybay, "select s.title from sessions_app_hooklink l join sessions_app_session s on s.id = l.session_id where l.cwd = ?", str(work)) == [("solo-worker",)]
    [(pre_tool_uses,)] = query(relaybay, "select count(*) from sessions_app_event where name = 'hook.PreToolUse'")
    assert pre_tool_uses == 1


