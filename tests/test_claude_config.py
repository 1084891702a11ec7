"""`python manage.py claude_config`: Claude Code settings (command or http hooks, the wake-up
hook) and the MCP server's entry, in one file for `--settings` and `--mcp-config`."""

import json
import shlex
import subprocess
import sys
from io import StringIO
from pathlib import Path

import httpx2
import pytest
from django.core.management import CommandError, call_command
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.live_server import MANAGE, live_relaybay  # noqa: F401  (fixture)

EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Notification", "Stop", "SessionEnd"}
HOOK_CLIENT = Path(__file__).resolve().parents[1] / "bin" / "relaybay-hook"
URL = "http://127.0.0.1:8123"
TOKEN = "tok'en with $pecials"


@pytest.fixture(autouse=True)
def relaybay_settings(settings):
    settings.RELAYBAY_URL = URL
    settings.RELAYBAY_TOKEN = TOKEN


def claude_config(*args):
    out, err = StringIO(), StringIO()
    call_command("claude_config", *args, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def handlers(config, event):
    (group,) = config["hooks"][event]
    return group["hooks"]


def file_settings(config):
    """NAME=value lines of the hook client's configuration file the settings name."""
    path = Path(config["env"]["RELAYBAY_HOOK_CONFIG"])
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_it_prints_settings_json_with_every_hook_event():
    config, _ = claude_config()
    assert set(config) == {"env", "hooks", "mcpServers"}
    assert set(config["hooks"]) == EVENTS


def test_the_permission_request_hook_waits_as_long_as_the_owner_may():
    config, _ = claude_config()
    [handler] = handlers(config, "PermissionRequest")
    assert handler["command"] == "$RELAYBAY_HOOK" and handler["timeout"] >= 3600


def test_one_file_connects_hooks_and_mcp():
    # Claude Code reads hooks from --settings and servers from --mcp-config: the same file serves both.
    config, hint = claude_config("--session", "both")
    only_mcp, _ = claude_config("--mcp")
    assert config["mcpServers"] == only_mcp["mcpServers"]
    assert "claude --settings FILE --mcp-config FILE" in hint


def test_every_command_is_the_short_client_variable_which_runs_the_system_python():
    config, _ = claude_config()
    for event in EVENTS:
        assert handlers(config, event)[0]["command"] == "$RELAYBAY_HOOK"
    python, flag, client = config["env"]["RELAYBAY_HOOK"].split(" ")
    assert Path(python).is_absolute() and Path(python).is_file(), python
    # The machine's interpreter, not this virtualenv's: the client needs only the stdlib.
    assert not Path(python).is_relative_to(sys.prefix), python
    assert flag == "-S"
    assert Path(client) == HOOK_CLIENT and Path(client).is_file()


def test_the_address_and_token_are_in_a_private_file_and_never_in_a_command():
    # Claude Code shows the model the command line of a wake-up hook that woke it.
    config, _ = claude_config()
    stored = file_settings(config)
    assert (stored["RELAYBAY_URL"], stored["RELAYBAY_TOKEN"]) == (URL, TOKEN)
    path = Path(config["env"]["RELAYBAY_HOOK_CONFIG"])
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    for event in EVENTS:
        for handler in handlers(config, event):
            assert TOKEN not in handler["command"] and URL not in handler["command"]
    assert TOKEN not in json.dumps(config["env"])


def test_a_client_path_with_spaces_is_named_quoted_in_the_commands(tmp_path):
    # The shell would split an unquoted $RELAYBAY_HOOK at the space.
    from install.management.commands.claude_config import hook_settings

    python = str(tmp_path / "my pythons" / "python3")
    config = hook_settings(url=URL, token=TOKEN, python=python)
    command = handlers(config, "UserPromptSubmit")[0]["command"]
    assert shlex.split(command)[:2] == [python, "-S"]
    assert handlers(config, "Stop")[1]["command"] == f"{command} wait"
    assert TOKEN not in command


def test_pre_tool_use_runs_before_every_tool_and_post_tool_use_only_after_send_message():
    config, _ = claude_config()
    assert config["hooks"]["PreToolUse"][0]["matcher"] == "*"
    # The one tool whose result relaybay reads: a hook process per tool call, not two.
    assert config["hooks"]["PostToolUse"][0]["matcher"] == "SendMessage"


def test_stop_also_runs_the_wake_up_client_with_async_rewake():
    config, _ = claude_config("--wait", "45")
    plain, wake_up = handlers(config, "Stop")
    assert wake_up["asyncRewake"] is True
    # Short and free of configuration: this is the line the model is shown when it is woken.
    assert wake_up["command"] == "$RELAYBAY_HOOK wait"
    assert file_settings(config)["RELAYBAY_WAIT"] == "45"
    # Claude Code must not kill the waiter before it gives up on its own.
    assert 45 < wake_up["timeout"] <= 120
    assert "asyncRewake" not in plain and plain["command"] == "$RELAYBAY_HOOK"


def test_the_default_wait_is_eight_hours_in_attended_sessions_only():
    config, _ = claude_config()
    assert file_settings(config)["RELAYBAY_WAIT"] == "28800"
    assert "RELAYBAY_WAIT_UNATTENDED" not in file_settings(config)


def test_wait_unattended_lets_headless_workers_wait_for_mail():
    config, _ = claude_config("--wait-unattended")
    assert file_settings(config)["RELAYBAY_WAIT_UNATTENDED"] == "1"


def test_session_and_spool_options_reach_the_client(tmp_path):
    spool = tmp_path / "spool.jsonl"
    config, _ = claude_config("--session", "Refactor auth", "--spool", str(spool))
    stored = file_settings(config)
    assert stored["RELAYBAY_SESSION"] == "Refactor auth"
    assert stored["RELAYBAY_SPOOL"] == str(spool)


def test_url_option_overrides_the_setting():
    config, _ = claude_config("--url", "http://10.0.0.5:9000/")
    assert file_settings(config)["RELAYBAY_URL"] == "http://10.0.0.5:9000"


def test_every_hook_is_a_command_hook_that_carries_the_process_proof():
    # Claude Code interpolates no CLAUDE_CODE_MESSAGING_TOKEN into an http hook's headers, and a
    # running session's hooks are believed only with its proof (docs/rules.md §1.5).
    config, _ = claude_config()
    assert {handler["type"] for event in EVENTS for handler in handlers(config, event)} == {"command"}
    with pytest.raises(CommandError):
        claude_config("--http")


def test_mcp_http_connects_relaybays_http_server_with_the_process_proof_helper():
    config, hint = claude_config("--mcp", "--mcp-http")
    server = config["mcpServers"]["relaybay"]
    assert server["type"] == "http"
    assert server["url"] == f"{URL}/mcp"
    assert server["headers"] == {"Authorization": f"Bearer {TOKEN}"}
    python, flag, helper = shlex.split(server["headersHelper"])
    assert (flag, helper) == ("-S", str(HOOK_CLIENT.parent / "relaybay-mcp-headers"))
    assert Path(python).is_file() and Path(helper).is_file()
    line = next(line.strip() for line in hint.splitlines() if line.strip().startswith("claude mcp add-json"))
    words = shlex.split(line)
    assert words[:4] == ["claude", "mcp", "add-json", "relaybay"]
    assert json.loads(words[4]) == server
    assert words[5:] == ["--scope", "user"]


def test_the_mcp_server_is_the_local_forwarder_run_by_the_machines_python_by_default():
    config, hint = claude_config("--mcp")
    server = config["mcpServers"]["relaybay"]
    assert server["type"] == "stdio"
    assert Path(server["command"]).is_file() and server["command"] != sys.executable
    assert server["args"] == ["-S", str(HOOK_CLIENT.parent / "relaybay-mcp")]
    assert server["env"] == {"RELAYBAY_URL": URL, "RELAYBAY_TOKEN": TOKEN}
    line = next(line.strip() for line in hint.splitlines() if line.strip().startswith("claude mcp add-json"))
    assert json.loads(shlex.split(line)[4]) == server


async def test_both_printed_mcp_entries_answer_through_the_sdk_client(live_relaybay, settings, tmp_path):
    # The entries run as Claude Code runs them: the helper through sh with the process's
    # messaging token, the stdio server as the command with its env (and nothing else).
    settings.RELAYBAY_TOKEN = live_relaybay.token
    live_relaybay.start_session("hook-printed-mcp", "Printed MCP")
    http_entry = claude_config("--url", live_relaybay.url, "--mcp", "--mcp-http")[0]["mcpServers"]["relaybay"]
    stdio_entry = claude_config("--url", live_relaybay.url, "--mcp")[0]["mcpServers"]["relaybay"]
    messaging = {"PATH": "/usr/bin:/bin", "CLAUDE_CODE_MESSAGING_TOKEN": "secret-of-one-claude-process"}
    helper = subprocess.run(["sh", "-c", http_entry["headersHelper"]], env=messaging, capture_output=True, text=True, timeout=30)
    assert set(json.loads(helper.stdout)) == {"X-Relaybay-Process"}
    async with httpx2.AsyncClient(headers={**http_entry["headers"], **json.loads(helper.stdout)}) as client:
        async with streamable_http_client(http_entry["url"], http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                over_http = await session.call_tool("sessions_list", {"live_only": True})
    env = {**stdio_entry["env"], "HOME": str(tmp_path)}
    params = StdioServerParameters(command=stdio_entry["command"], args=stdio_entry["args"], env=env, cwd=str(tmp_path))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            over_stdio = await session.call_tool("sessions_list", {"live_only": True})
    assert not over_http.is_error and not over_stdio.is_error
    assert over_http.content == over_stdio.content
    assert "Printed MCP" in [row["name"] for row in json.loads(over_http.content[0].text)["sessions"]]


def test_a_wait_that_is_not_positive_is_refused():
    with pytest.raises(CommandError):
        claude_config("--wait", "0")


def test_a_session_name_with_a_line_break_is_refused():
    with pytest.raises(CommandError, match="one line"):
        claude_config("--session", "two\nlines")


def test_the_printed_session_start_command_connects_a_session(live_relaybay, settings, tmp_path):
    # Run the printed command the way Claude Code does (through sh, payload on stdin) against
    # a real relaybay: the session is named from the start.
    settings.RELAYBAY_TOKEN = live_relaybay.token
    config, _ = claude_config("--url", live_relaybay.url, "--session", "Printed", "--spool", str(tmp_path / "spool"))
    payload = {"hook_event_name": "SessionStart", "session_id": "hook-printed", "cwd": str(tmp_path), "source": "startup"}
    done = subprocess.run(
        ["sh", "-c", handlers(config, "SessionStart")[0]["command"]],
        env={"PATH": "/usr/bin:/bin", **config["env"]},  # Claude Code adds the settings' env
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert '"Printed"' in context and "Its link is exact" in context
