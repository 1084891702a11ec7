"""The hook client as the Claude Code plugin runs it (`--plugin`): relaybay's address and token
from the plugin's options, and standing aside in a session a claude_config file connects."""

import json
import subprocess
import sys

from tests.live_server import REPO_ROOT, free_port

CLIENT = REPO_ROOT / "bin" / "relaybay-hook"
EVENT = json.dumps({"session_id": "s-plugin", "hook_event_name": "UserPromptSubmit", "prompt": "hi", "cwd": "/tmp"})


def run_client(tmp_path, *args, **env):
    spool = tmp_path / "spool.jsonl"
    done = subprocess.run(
        [sys.executable, "-S", str(CLIENT), *args], input=EVENT, capture_output=True, text=True, timeout=30,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "RELAYBAY_SPOOL": str(spool), **env},
    )  # fmt: skip
    return done, spool


def test_a_plugin_hook_posts_to_the_address_of_the_plugins_options(tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    done, spool = run_client(tmp_path, "--plugin", CLAUDE_PLUGIN_OPTION_URL=down, CLAUDE_PLUGIN_OPTION_TOKEN="t")
    assert done.returncode == 0
    # Nothing answers there: the event is kept for later, as for any hook.
    assert json.loads(spool.read_text().splitlines()[0])


def test_a_plugin_hook_stands_aside_where_a_claude_config_file_connects_the_session(tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    config = tmp_path / "hook.conf"
    config.write_text(f"RELAYBAY_URL={down}\n")
    done, spool = run_client(tmp_path, "--plugin", RELAYBAY_HOOK_CONFIG=str(config), CLAUDE_PLUGIN_OPTION_URL=down)
    assert (done.returncode, done.stdout, spool.exists()) == (0, "", False)
    # The same session's own hook (no --plugin) does report.
    done, spool = run_client(tmp_path, RELAYBAY_HOOK_CONFIG=str(config))
    assert done.returncode == 0 and spool.exists()
