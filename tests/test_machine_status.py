"""`manage.py status` and the board's footer (board/machine.py, each engine's connection, engines/installed.py): whether
relaybay is up and where, which CLIs this machine connected and how, its live sessions, and what
the hook clients keep spooled here — with relaybay up, down, and events spooled by the real
hook client while it was down."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engines import claude_code, codex, installed
from engines.gemini import ENGINE as GEMINI
from install.connectors import claude as claude_connector, config_files, json_settings
from tests.board_fixtures import board, named_session, owner  # noqa: F401
from tests.e2e.claude_cli import claude_bin
from tests.live_server import MANAGE, REPO_ROOT, LiveRelaybay, server_env, start_relaybay, stop_relaybay

HOOK = REPO_ROOT / "bin" / "relaybay-hook"


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


def manage_as(live, home, *args):
    env = server_env(live.process.relaybay_data, live.token, RELAYBAY_URL=live.url, HOME=str(home))
    env.pop("CODEX_HOME", None)
    return subprocess.run([sys.executable, str(MANAGE), *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180)


def connected_home(live, tmp_path):
    """A person's HOME with all three CLIs connected by `manage.py connect`."""
    home = tmp_path / "home"
    home.mkdir()
    for args in (["claude", "--cli", claude_bin()], ["codex"], ["gemini"]):
        done = manage_as(live, home, "connect", *args)
        assert done.returncode == 0, done.stderr
    return home


def spool_while_down(url, token, home, events=2):
    """The real hook client, run as a Claude Code hook while relaybay is down: it spools."""
    for n in range(events):
        payload = {"hook_event_name": "UserPromptSubmit", "session_id": "hook-offline", "cwd": "/work/off", "prompt": f"p{n}"}
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "RELAYBAY_URL": url, "RELAYBAY_TOKEN": token}
        done = subprocess.run(["python3", "-S", str(HOOK)], input=json.dumps(payload), env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    return home / ".relaybay" / "spool.jsonl"


def test_status_with_relaybay_up_says_where_which_clis_are_connected_and_how_and_its_live_sessions(relaybay, tmp_path):
    home = connected_home(relaybay, tmp_path)
    relaybay.start_session("hook-up-1", name="up-one")
    done = manage_as(relaybay, home, "status")
    assert done.returncode == 0, done.stderr
    said = done.stdout
    assert f"relaybay: up at {relaybay.url}" in said
    assert "Login service: not installed" in said
    assert "Live sessions: 1 (1 claude-code)" in said
    assert f"Claude Code: the relaybay plugin {claude_connector.plugin_version()} (" in said
    assert f"{home}/.claude/plugins/installed_plugins.json" in said
    assert f"{codex.ENGINE.label}: hooks; MCP server: bin/relaybay-mcp ({home}/.codex/hooks.json, {home}/.codex/config.toml)" in said
    assert f"Gemini CLI: hooks; MCP server: bin/relaybay-mcp ({home}/.gemini/settings.json)" in said
    assert "Spooled here, waiting for relaybay: nothing" in said
    as_json = json.loads(manage_as(relaybay, home, "status", "--json").stdout)
    assert as_json["up"] is True and as_json["live_sessions"] == {"claude-code": 1}
    assert [c["cli"] for c in as_json["connected"]] == [claude_code.ENGINE.label, codex.ENGINE.label, GEMINI.label]


def test_status_with_relaybay_down_and_events_spooled_says_so_and_exits_1(relaybay, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    stop_relaybay(relaybay.process)
    spool = spool_while_down(relaybay.url, relaybay.token, home)
    done = manage_as(relaybay, home, "status")
    assert done.returncode == 1
    said = done.stdout
    assert f"relaybay: down: nothing answers at {relaybay.url}" in said and "make run" in said
    assert "Connected on this machine: no CLI" in said
    assert "Spooled here, waiting for relaybay: 2 events" in said
    assert f"  {spool}: 2 events, the oldest from 20" in said
    # Back up: the next hook replays the spool, and status says nothing waits.
    from tests.live_server import restart_relaybay

    relaybay.process = restart_relaybay(relaybay.process)
    spool_while_down(relaybay.url, relaybay.token, home, events=1)
    assert "Spooled here, waiting for relaybay: nothing" in manage_as(relaybay, home, "status").stdout


def test_the_boards_footer_shows_live_sessions_connections_and_what_is_spooled(board, tmp_path, monkeypatch):  # noqa: F811
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    named_session("footer-one")
    gemini_settings = home / ".gemini" / "settings.json"
    gemini_settings.parent.mkdir(parents=True)
    gemini_settings.write_text(json.dumps({"hooks": {"BeforeAgent": [{"hooks": [{"command": "python3 -S /x/bin/relaybay-hook --engine gemini"}]}]}}))
    spool = home / ".relaybay" / "spool.jsonl"
    spool.parent.mkdir()
    spool.write_text(json.dumps({"spooled_at": "2026-01-01T00:00:00+00:00", "payload": "{}"}) + "\n")
    page = board.get("/").content.decode()
    footer = page[page.index('<footer class="machine"') :]
    assert "1 live session " in footer or "1 live session\n" in footer
    assert "Gemini CLI (hooks)" in footer
    assert "1 event spooled here" in footer


def test_the_marks_status_reads_are_the_ones_connect_writes():
    assert claude_code.PLUGIN == claude_connector.PLUGIN
    # Codex's entry is found by what it is: the forwarder connect writes.
    assert installed.mcp_kind(config_files.mcp_server(Path("/data/hook-config/x.conf"))) == "bin/relaybay-mcp"
    assert json_settings.SERVER == installed.SERVER and f"manage.py connect {GEMINI.connect_name}" in json_settings.mark(GEMINI)
