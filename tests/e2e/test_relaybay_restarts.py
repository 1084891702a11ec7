"""relaybay restarted under running sessions, as people restart it (an upgrade, a reboot, a
crash): every way of connecting keeps its tools with nobody touching /mcp.

Two interactive `claude` sessions under tmux, connected once (the plugin by `manage.py connect
claude`, or `claude_config` merged into ~/.claude/settings.json), each with its own scripted
model server. relaybay stops for longer than Claude Code keeps an http MCP server that went
away (it dials again for about 16 s, docs/mcp.md); a send while it is down is a tool error
saying so, and the next send after it is back is stored and wakes the idle recipient.
"""

import json
import subprocess
import sys
import time
import uuid

import pytest

from tests.e2e.claude_cli import claude_bin, prepare_home, start_interactive
from tests.e2e.model_server import ModelServer, text, tool
from tests.e2e.relaybay_cli import query
from tests.e2e.test_claude_comments import wait_until
from tests.e2e.test_plain_sessions import connect_once, row_of_folder, waiting
from tests.live_server import MANAGE, REPO_ROOT, LiveRelaybay, restart_relaybay, server_env, start_relaybay, stop_relaybay

# The clients' behaviour across a restart, which neither database nor channel layer changes.
pytestmark = pytest.mark.embedded_only
# Longer than Claude Code dials a dropped http MCP server again (it gave up after 20 s).
DOWN_SECONDS = 25
NOT_RUNNING = "relaybay is not running at "


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


def connect_plugin(live, home):
    done = subprocess.run(
        [sys.executable, str(MANAGE), "connect", "claude", "--url", live.url, "--cli", claude_bin()],
        cwd=REPO_ROOT, env={**server_env(live.process.relaybay_data, live.token), "HOME": str(home)},
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return "mcp__plugin_relaybay_relaybay__", "Bash mcp__plugin_relaybay_relaybay"


def connect_claude_config(live, home):
    connect_once(live, home)
    return "mcp__relaybay__", "Bash mcp__relaybay"


CONNECTIONS = {"plugin": connect_plugin, "claude_config": connect_claude_config}


@pytest.mark.parametrize("connection", CONNECTIONS)
def test_a_running_session_keeps_its_tools_across_a_restart_and_is_told_while_relaybay_is_down(connection, relaybay, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    prefix, allowed = CONNECTIONS[connection](relaybay, home)
    tag = uuid.uuid4().hex[:6]
    folders = {name: tmp_path / "work" / f"{name}{tag}" for name in ("api", "web")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    prepare_home(home, *folders.values())
    with ModelServer() as api_model, ModelServer() as web_model:
        api_model.add_steps(text("api is idle"))
        web_model.add_steps(text("web is idle"))
        with (
            start_interactive(model_url=api_model.url, cwd=folders["api"], home=home, allowed_tools=allowed) as api,
            start_interactive(model_url=web_model.url, cwd=folders["web"], home=home, allowed_tools=allowed) as web,
        ):
            for name, session in (("api", api), ("web", web)):
                session.send("start")
                session.wait_for_screen(f"{name} is idle", timeout=60)
            wait_until(lambda: waiting(relaybay, folders["web"]), timeout=30)
            web_name = row_of_folder(relaybay, folders["web"])[0]

            stop_relaybay(relaybay.process)
            time.sleep(DOWN_SECONDS)
            api_model.add_steps(tool(prefix + "message_send", {"to": web_name, "body": "while-down-6161"}), text("api tried while down"))
            api.send("tell web while relaybay is down")
            api.wait_for_screen("api tried while down", timeout=60)
            # The model's request after the call holds relaybay's sentence as the tool's error.
            tried = json.dumps(api_model.main_requests()[-1])
            assert NOT_RUNNING + relaybay.url in tried and "your message was not sent" in tried
            assert "No such tool" not in json.dumps(api_model.request_texts())

            relaybay.process = restart_relaybay(relaybay.process)
            wait_until(lambda: waiting(relaybay, folders["web"]), timeout=60)
            web_model.add_steps(text("web got mail after the restart"))
            api_model.add_steps(tool(prefix + "message_send", {"to": web_name, "body": "after-restart-7272"}), text("api sent after restart"))
            api.send("tell web again")
            api.wait_for_screen("api sent after restart", timeout=60)
            assert "No such tool" not in json.dumps(api_model.request_texts())
            # Stored, from the proven sender, and delivered: the idle recipient is woken with it.
            [(verified,)] = query(relaybay, "select sender_verified from session_message where body = ?", "after-restart-7272")
            assert bool(verified)
            web_model.wait_for_text("after-restart-7272", timeout=60)
            assert not query(relaybay, "select 1 from session_message where body = ?", "while-down-6161")
