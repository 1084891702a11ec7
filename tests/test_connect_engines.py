"""`manage.py connect codex|gemini` and `disconnect codex|gemini` (install/connectors/codex.py,
and json_settings.py as Gemini CLI's engine declares it; docs/rules.md §1.6): relaybay's hooks and
MCP server go into the person's Codex and Gemini CLI configuration beside everything else, the
token only in relaybay's own file, with the file as it was kept beside it once; a second connect
changes nothing; a dry run writes nothing and shows no token; disconnect takes out exactly what
connect added, and relaybay's file; a file relaybay cannot read back, or a server of the same
name it did not write, stops it before anything is written. The real CLIs read what connect
writes in tests/e2e/test_codex_sessions.py and test_gemini_sessions.py;
tests/test_connect_safety.py breaks the files on purpose."""

import json
import stat
import tomllib

import pytest

from engines.gemini import ENGINE as GEMINI
from install import connectors
from install.connectors import ConnectError, Target, codex, config_files, json_settings

# What `manage.py connect gemini` runs.
gemini = connectors.engine("gemini")

TOKEN = "agents-token-5e5e"
URL = "http://127.0.0.1:8123"

PERSONS_TOML = """\
# my Codex settings
model = "gpt-5"  # the one I like
approval_policy = "on-request"

[mcp_servers.github]
command = "github-mcp"
args = ["--stdio"]

[profiles.fast]
model = "gpt-5-mini"
"""
PERSONS_HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
PERSONS_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "lint-check"}]}]},
    "mcpServers": {"github": {"command": "github-mcp"}},
}


@pytest.fixture(autouse=True)
def data_folder(settings, tmp_path):
    # The hook client's configuration file goes into relaybay's data folder: a throwaway one.
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".gemini").mkdir()
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def target(home, *, dry_run=False, token=TOKEN, said=None):
    return Target(url=URL, token=token, home=home, cli=None, dry_run=dry_run, say=(said.append if said is not None else lambda line: None))


def private(path):
    return stat.S_IMODE(path.stat().st_mode) == 0o600


def forwarder(settings, config):
    """relaybay's MCP server entry: the stdlib forwarder, reading the configuration file."""
    assert config.parent == settings.DATA_DIR / "hook-config" and private(config)
    return {"command": config_files.hook_python(), "args": ["-S", str(config_files.MCP_FORWARDER)],
            "env": {"RELAYBAY_HOOK_CONFIG": str(config)}}


def hook_configs(settings):
    return sorted((settings.DATA_DIR / "hook-config").glob("*.conf"))


# --- Codex ---------------------------------------------------------------------------------


def test_connect_codex_adds_its_hooks_and_server_beside_the_persons_and_keeps_a_copy(home, settings):
    config, hooks = home / ".codex" / "config.toml", home / ".codex" / "hooks.json"
    config.write_text(PERSONS_TOML)
    config.chmod(0o640)
    hooks.write_text(json.dumps(PERSONS_HOOKS))
    said = []
    codex.connect(target(home, said=said))

    text = config.read_text()
    # The person's file, comments included, is all there, in order; relaybay's table joins the
    # person's mcp_servers.
    lines = text.splitlines()
    persons = [line for line in PERSONS_TOML.splitlines() if line]
    assert [line for line in lines if line in persons] == persons
    assert lines.index("[mcp_servers.relaybay]") == lines.index("[mcp_servers.github]") + 4
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["github"] == {"command": "github-mcp", "args": ["--stdio"]}
    [conf] = hook_configs(settings)
    assert parsed["mcp_servers"]["relaybay"] == forwarder(settings, conf)
    assert f"RELAYBAY_TOKEN={TOKEN}" in conf.read_text().splitlines()
    written = json.loads(hooks.read_text())["hooks"]
    assert written["Stop"][0] == PERSONS_HOOKS["hooks"]["Stop"][0]
    assert set(written) == set(codex.EVENTS)
    command = written["SessionStart"][0]["hooks"][0]["command"]
    assert command.startswith("RELAYBAY_HOOK_CONFIG=") and command.endswith("bin/relaybay-hook --engine codex")
    # No token in Codex's files, and the person's mode kept.
    assert TOKEN not in text + hooks.read_text()
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert (home / ".codex" / "config.toml.relaybay-backup").read_text() == PERSONS_TOML
    assert json.loads((home / ".codex" / "hooks.json.relaybay-backup").read_text()) == PERSONS_HOOKS
    # The trust step cannot be missed.
    assert any("/hooks" in line and "trust" in line for line in said), said


def test_connect_codex_twice_changes_nothing_and_a_new_token_replaces_the_old(home, settings):
    codex.connect(target(home))
    config, hooks = home / ".codex" / "config.toml", home / ".codex" / "hooks.json"
    first = (config.read_text(), hooks.read_text())
    said = []
    codex.connect(target(home, said=said))
    assert (config.read_text(), hooks.read_text()) == first
    assert sum("nothing to change" in line for line in said) == 1
    codex.connect(target(home, token="a-rotated-token"))
    parsed = tomllib.loads(config.read_text())
    # The new configuration file replaces the old one, which goes with its token.
    [conf] = hook_configs(settings)
    assert parsed["mcp_servers"]["relaybay"] == forwarder(settings, conf)
    assert "RELAYBAY_TOKEN=a-rotated-token" in conf.read_text().splitlines()
    assert config.read_text().count("[mcp_servers.relaybay]") == 1
    assert len(json.loads(hooks.read_text())["hooks"]["Stop"]) == 1


def test_a_codex_dry_run_writes_nothing_and_shows_no_token(home, settings):
    config = home / ".codex" / "config.toml"
    config.write_text(PERSONS_TOML)
    said = []
    codex.connect(target(home, dry_run=True, said=said))
    assert config.read_text() == PERSONS_TOML
    assert not (home / ".codex" / "hooks.json").exists() and not (home / ".codex" / "config.toml.relaybay-backup").exists()
    assert not (settings.DATA_DIR / "hook-config").exists()
    shown = "\n".join(said)
    assert "+[mcp_servers.relaybay]" in shown and "would change" in shown
    assert TOKEN not in shown


def test_disconnect_codex_leaves_the_persons_files_as_they_were(home):
    config, hooks = home / ".codex" / "config.toml", home / ".codex" / "hooks.json"
    config.write_text(PERSONS_TOML)
    # Written the person's way: disconnect gives back the text, not only the same object.
    hooks.write_text(json.dumps(PERSONS_HOOKS, separators=(",", ":")))
    codex.connect(target(home))
    codex.disconnect(target(home))
    assert config.read_text() == PERSONS_TOML
    assert hooks.read_text() == json.dumps(PERSONS_HOOKS, separators=(",", ":"))
    # A second disconnect finds nothing of relaybay's.
    codex.disconnect(target(home))
    assert config.read_text() == PERSONS_TOML


def test_disconnect_codex_removes_the_files_connect_made_and_relaybays_own(home, settings):
    codex.connect(target(home))
    gemini.connect(target(home))
    codex.disconnect(target(home))
    assert not (home / ".codex" / "config.toml").exists() and not (home / ".codex" / "hooks.json").exists()
    # Gemini's configuration file stays while Gemini CLI is connected.
    [kept] = hook_configs(settings)
    assert f"RELAYBAY_CONNECTED=gemini {home / '.gemini'}" in kept.read_text()
    gemini.disconnect(target(home))
    assert hook_configs(settings) == []


def test_mcp_servers_written_inline_gets_relaybays_inline_and_disconnect_gives_the_file_back(home, settings):
    config = home / ".codex" / "config.toml"
    config.write_text('mcp_servers = { github = { command = "x" } }\n')
    codex.connect(target(home))
    parsed = tomllib.loads(config.read_text())
    assert parsed["mcp_servers"]["github"] == {"command": "x"}
    assert parsed["mcp_servers"]["relaybay"] == forwarder(settings, hook_configs(settings)[0])
    codex.disconnect(target(home))
    assert config.read_text() == 'mcp_servers = { github = { command = "x" } }\n'


def test_codex_home_is_where_codex_home_says(home, tmp_path, monkeypatch):
    elsewhere = tmp_path / "codex-elsewhere"
    monkeypatch.setenv("CODEX_HOME", str(elsewhere))
    codex.connect(target(home))
    assert (elsewhere / "config.toml").exists() and not (home / ".codex" / "config.toml").exists()


@pytest.mark.parametrize(
    "toml, hooks, phrase",
    [
        ("model = \n", None, "is not valid TOML"),
        ('[mcp_servers.relaybay]\nurl = "http://elsewhere/mcp"\n', None, "that relaybay did not write"),
        (None, "{not json", "is not valid JSON"),
        (None, '["hooks"]', "is not a hooks file"),
        (None, '{"hooks": []}', "is not a hooks file"),
    ],
)
def test_connect_codex_refuses_what_it_cannot_read_back_and_writes_nothing(home, toml, hooks, phrase):
    config, hooks_path = home / ".codex" / "config.toml", home / ".codex" / "hooks.json"
    if toml is not None:
        config.write_text(toml)
    if hooks is not None:
        hooks_path.write_text(hooks)
    with pytest.raises(ConnectError, match=phrase):
        codex.connect(target(home))
    assert (config.read_text() if config.exists() else None) == toml
    assert (hooks_path.read_text() if hooks_path.exists() else None) == hooks
    assert not list((home / ".codex").glob("*.relaybay-backup"))


# --- Gemini CLI ----------------------------------------------------------------------------


def test_connect_gemini_adds_its_hooks_and_server_beside_the_persons_and_keeps_a_copy(home, settings):
    path = home / ".gemini" / "settings.json"
    path.write_text(json.dumps(PERSONS_SETTINGS))
    gemini.connect(target(home))
    written = json.loads(path.read_text())
    assert written["security"] == PERSONS_SETTINGS["security"]
    assert written["mcpServers"]["github"] == {"command": "github-mcp"}
    server = written["mcpServers"]["relaybay"]
    assert server == {**forwarder(settings, hook_configs(settings)[0]), "trust": True, "description": json_settings.mark(GEMINI)}
    assert TOKEN not in path.read_text()
    assert written["hooks"]["BeforeTool"][0] == PERSONS_SETTINGS["hooks"]["BeforeTool"][0]
    assert set(written["hooks"]) == set(GEMINI.settings.events)
    ours = written["hooks"]["AfterTool"][-1]
    assert ours["matcher"] == "*" and ours["hooks"][0]["name"] == "relaybay" and ours["hooks"][0]["timeout"] == 30000
    assert ours["hooks"][0]["command"].endswith("bin/relaybay-hook --engine gemini")
    assert json.loads((home / ".gemini" / "settings.json.relaybay-backup").read_text()) == PERSONS_SETTINGS


def test_connect_gemini_twice_changes_nothing_and_disconnect_leaves_the_file_as_it_was(home):
    path = home / ".gemini" / "settings.json"
    original = json.dumps(PERSONS_SETTINGS, indent=4)
    path.write_text(original)
    gemini.connect(target(home))
    once = path.read_text()
    gemini.connect(target(home))
    assert path.read_text() == once
    gemini.disconnect(target(home))
    assert path.read_text() == original


def test_a_gemini_dry_run_writes_nothing_and_shows_no_token(home):
    path = home / ".gemini" / "settings.json"
    path.write_text(json.dumps(PERSONS_SETTINGS))
    said = []
    gemini.connect(target(home, dry_run=True, said=said))
    assert json.loads(path.read_text()) == PERSONS_SETTINGS
    shown = "\n".join(said)
    assert "bin/relaybay-mcp" in shown and TOKEN not in shown


@pytest.mark.parametrize(
    "text, phrase",
    [
        ('{"ui": {} // my theme\n}', "is not plain JSON"),
        ("[1, 2]", "does not hold a JSON object"),
        ('{"hooks": ["x"]}', '"hooks" that is not an object'),
        ('{"mcpServers": {"relaybay": {"command": "my-own-relaybay"}}}', "that relaybay did not write"),
    ],
)
def test_connect_gemini_refuses_what_it_cannot_read_back_and_writes_nothing(home, text, phrase):
    path = home / ".gemini" / "settings.json"
    path.write_text(text)
    with pytest.raises(ConnectError, match=phrase):
        gemini.connect(target(home))
    assert path.read_text() == text and not (home / ".gemini" / "settings.json.relaybay-backup").exists()


def test_with_the_codex_command_found_stop_also_runs_the_waiter_and_disconnect_takes_it_out(home, tmp_path):
    codex_cli = tmp_path / "bin" / "codex"
    codex_cli.parent.mkdir()
    codex_cli.write_text("#!/bin/sh\n")
    codex_cli.chmod(0o755)
    said = []
    codex.connect(Target(url=URL, token=TOKEN, home=home, cli=str(codex_cli), dry_run=False, say=said.append))
    hooks = home / ".codex" / "hooks.json"
    [group] = json.loads(hooks.read_text())["hooks"]["Stop"]
    event, waiter = (h["command"] for h in group["hooks"])
    assert waiter == event.replace(" --engine codex", " wait --engine codex") + f" --codex {codex_cli}"
    assert any("woken when mail arrives" in line for line in said) and any("8 hooks" in line for line in said), said
    codex.disconnect(target(home))
    assert not hooks.exists()
