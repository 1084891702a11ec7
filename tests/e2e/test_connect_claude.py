"""`manage.py connect claude` and `disconnect claude` with the real Claude Code CLI in a
throwaway HOME: the plugin (integrations/claude-code/) validated, installed for the person,
updated, and taken out without a trace."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.claude_cli import claude_bin, claude_env
from tests.e2e.model_server import ModelServer, text
from tests.live_server import MANAGE, REPO_ROOT, LiveRelaybay, free_port, live_relaybay, server_env, start_relaybay, stop_relaybay  # noqa: F401

# The CLI's own behaviour with relaybay's files: neither database nor channel layer changes it.
pytestmark = pytest.mark.embedded_only

MARKETPLACE = REPO_ROOT / "integrations" / "claude-code"
PLUGIN = MARKETPLACE / "plugins" / "relaybay"
PLUGIN_ID = "relaybay@relaybay-local"


def connect(live, home, *args, step="connect", manage=MANAGE, cli=None, **env):
    return subprocess.run(
        [sys.executable, str(manage), step, "claude", "--url", live.url, "--cli", cli or claude_bin(), *args],
        cwd=Path(manage).parent,
        env={**server_env(live.process.relaybay_data, live.token), "HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def claude(home, *args):
    done = subprocess.run([claude_bin(), *args], env=claude_env("http://127.0.0.1:9", home), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def installed(home):
    return [p for p in json.loads(claude(home, "plugin", "list", "--json")) if p["id"] == PLUGIN_ID]


def files_of(home):
    """Every file under HOME with its content."""
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(Path(home).rglob("*")) if p.is_file()}


def naming_relaybay(home):
    """The files under HOME that name relaybay or hold a token (Claude Code's own commands,
    even `claude plugin list`, write its bookkeeping files)."""
    return sorted(name for name, content in files_of(home).items() if b"relaybay" in content or b"live-" in content)


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_the_plugin_and_its_marketplace_pass_claude_plugin_validate():
    for folder in (MARKETPLACE, PLUGIN):
        done = subprocess.run([claude_bin(), "plugin", "validate", str(folder)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Validation passed" in done.stdout


def test_the_plugin_files_hold_what_the_connector_describes():
    from install.connectors import claude as connector

    assert json.loads((PLUGIN / "hooks" / "hooks.json").read_text()) == connector.plugin_hooks()
    assert json.loads((PLUGIN / ".mcp.json").read_text()) == connector.plugin_mcp()
    options = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())["userConfig"]
    assert options["token"]["sensitive"] is True and not options["url"].get("sensitive")


def test_connect_installs_the_plugin_for_every_session_and_keeps_the_token_private(live_relaybay, home):
    done = connect(live_relaybay, home)
    assert done.returncode == 0, done.stderr
    assert "Undo: .venv/bin/python manage.py disconnect claude" in done.stdout
    assert live_relaybay.token not in done.stdout
    [plugin] = installed(home)
    assert plugin["enabled"] and plugin["scope"] == "user"
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["pluginConfigs"][PLUGIN_ID]["options"]["url"] == live_relaybay.url
    # The token is kept in the credentials file, readable by its owner only, never in settings.
    credentials = home / ".claude" / ".credentials.json"
    assert json.loads(credentials.read_text())["pluginSecrets"][PLUGIN_ID]["token"] == live_relaybay.token
    assert credentials.stat().st_mode & 0o077 == 0
    for name in (".claude/settings.json", ".claude.json"):
        path = home / name
        assert not path.exists() or live_relaybay.token not in path.read_text()


def test_connect_again_changes_nothing_and_takes_a_new_address_and_a_rotated_token(live_relaybay, home, tmp_path):
    assert connect(live_relaybay, home).returncode == 0
    again = connect(live_relaybay, home)
    assert again.returncode == 0, again.stderr
    assert "Updated" in again.stdout and len(installed(home)) == 1
    # Another relaybay: a new port and another token, as after a restart elsewhere or a rotation.
    url, token, process = start_relaybay(tmp_path / "moved", token="rotated-" + "x" * 20)
    try:
        moved = connect(LiveRelaybay(url, token, process), home)
        assert moved.returncode == 0, moved.stderr
    finally:
        stop_relaybay(process)
    assert json.loads((home / ".claude" / "settings.json").read_text())["pluginConfigs"][PLUGIN_ID]["options"]["url"] == url
    assert json.loads((home / ".claude" / ".credentials.json").read_text())["pluginSecrets"][PLUGIN_ID]["token"] == token
    assert len(installed(home)) == 1


def test_a_dry_run_prints_the_commands_and_changes_nothing(live_relaybay, home):
    done = connect(live_relaybay, home, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"would run: claude plugin marketplace add {MARKETPLACE}" in done.stdout
    assert "would run: claude plugin install relaybay@relaybay-local" in done.stdout
    assert live_relaybay.token not in done.stdout
    assert naming_relaybay(home) == []


def test_without_the_cli_or_without_relaybay_connect_says_what_to_do_and_writes_nothing(live_relaybay, home, tmp_path):
    no_cli = connect(live_relaybay, home, cli=str(tmp_path / "no-such-claude"))
    assert no_cli.returncode != 0
    assert "is not at" in no_cli.stderr and "--cli PATH" in no_cli.stderr
    down = LiveRelaybay(f"http://127.0.0.1:{free_port()}", live_relaybay.token, live_relaybay.process)
    no_relaybay = connect(down, home)
    assert no_relaybay.returncode != 0
    assert "relaybay is not answering at" in no_relaybay.stderr and "make run" in no_relaybay.stderr
    assert files_of(home) == {}


def test_disconnect_leaves_no_relaybay_hook_mcp_server_or_secret_in_the_claude_home(live_relaybay, home, tmp_path):
    assert connect(live_relaybay, home).returncode == 0
    # A session ran under the plugin (Claude Code writes its copy, data and transcripts).
    project = tmp_path / "project"
    project.mkdir()
    with ModelServer([text("ran")]) as model:
        ran = subprocess.run(
            [claude_bin(), "-p", "hi", "--output-format", "json"],
            cwd=project, env=claude_env(model.url, home, cwd=project), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    done = connect(live_relaybay, home, step="disconnect")
    assert done.returncode == 0, done.stderr
    assert "Disconnected Claude Code" in done.stdout
    assert installed(home) == []
    for name, content in files_of(home / ".claude").items():
        # Transcripts keep what the session did, and Claude Code's unsent telemetry names the
        # plugins it saw, as with any plugin; nothing else names relaybay.
        if name.startswith(("projects/", "telemetry/")):
            continue
        assert live_relaybay.token.encode() not in content, name
        assert b"relaybay" not in content, name
    assert b"relaybay" not in (home / ".claude.json").read_bytes()


def test_connect_takes_out_a_hand_made_connection_and_keeps_the_persons_own_settings(live_relaybay, home):
    from tests.e2e.relaybay_cli import manage

    config = json.loads(manage(live_relaybay, "claude_config", "--url", live_relaybay.url).stdout)
    mine = {"type": "command", "command": "echo mine"}
    hooks = config["hooks"]
    hooks["PreToolUse"].append({"matcher": "Bash", "hooks": [mine]})
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"model": "opus", "env": {**config["env"], "MY_VAR": "1"}, "hooks": hooks}))
    claude(home, "mcp", "add-json", "relaybay", json.dumps(config["mcpServers"]["relaybay"]), "--scope", "user")

    done = connect(live_relaybay, home)
    assert done.returncode == 0, done.stderr
    assert "relaybay's hand-merged hooks and env taken out" in done.stdout
    kept = json.loads(settings.read_text())
    assert kept["model"] == "opus" and kept["env"] == {"MY_VAR": "1"}
    assert kept["hooks"] == {"PreToolUse": [{"matcher": "Bash", "hooks": [mine]}]}
    assert "relaybay" not in json.loads((home / ".claude.json").read_text()).get("mcpServers", {})
    # The one copy kept beside it is the person's file without relaybay's part: no token in it.
    backup = (home / ".claude" / "settings.json.relaybay-backup").read_text()
    assert "echo mine" in backup and "$RELAYBAY_HOOK" not in backup and live_relaybay.token not in backup
    assert installed(home)


def test_a_new_plugin_version_reaches_every_new_session_when_connect_runs_again(live_relaybay, home, tmp_path):
    # A checkout of relaybay that `git pull` then brings a new plugin version to.
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO_ROOT, checkout, symlinks=True, ignore=shutil.ignore_patterns(".git", ".venv", "node_modules", "data", "__pycache__"))
    (checkout / ".venv").symlink_to(REPO_ROOT / ".venv")
    assert connect(live_relaybay, home, manage=checkout / "manage.py").returncode == 0
    [plugin] = installed(home)
    assert plugin["readFromFolder"] == str(checkout / "integrations" / "claude-code" / "plugins" / "relaybay")

    manifest = checkout / "integrations" / "claude-code" / "plugins" / "relaybay" / ".claude-plugin" / "plugin.json"
    data = json.loads(manifest.read_text())
    data["version"] = "99.0.0"
    manifest.write_text(json.dumps(data))
    marker = tmp_path / "new-version-ran"
    hooks_file = manifest.parent.parent / "hooks" / "hooks.json"
    hooks = json.loads(hooks_file.read_text())
    hooks["hooks"]["SessionStart"][0]["hooks"].append({"type": "command", "command": f"touch {marker}"})
    hooks_file.write_text(json.dumps(hooks))

    updated = connect(live_relaybay, home, manage=checkout / "manage.py")
    assert updated.returncode == 0, updated.stderr
    assert "claude plugin update relaybay@relaybay-local" in updated.stdout
    [plugin] = installed(home)
    assert plugin["version"] == "99.0.0"
    project = tmp_path / "project"
    project.mkdir()
    with ModelServer([text("new")]) as model:
        ran = subprocess.run(
            [claude_bin(), "-p", "hi", "--output-format", "json"],
            cwd=project, env=claude_env(model.url, home, cwd=project), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    assert marker.exists()
