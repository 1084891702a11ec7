"""`connect` and `disconnect` on a person's machine as it really is (install/connectors/edits.py,
codex.py, gemini.py): a block an earlier relaybay wrote that lost its end marker, Codex's own
`codex mcp add` rewriting config.toml (the real Codex CLI), a read-only file, a full disk
(`ulimit -f`), a folder or a file that is not UTF-8 where the CLI reads its settings, a link, a
reader polling the file throughout: nothing of the person's is lost, nothing is half-written, a
refusal says why and changes nothing, and after disconnect no file under HOME holds the token."""

import json
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from install import connectors
from install.connectors import ConnectError, Target, codex, json_settings
from install.management.commands.connect import reach_relaybay
from tests.e2e.agent_clis import CODEX_BIN
from tests.test_hook_client_safety import impostor, shared_tmp  # noqa: F401  (fixtures)

# What `manage.py connect gemini` runs.
gemini = connectors.engine("gemini")
TOKEN = "agents-token-7f7f"
URL = "http://127.0.0.1:8123"
REPO = Path(__file__).resolve().parent.parent

# What an earlier relaybay wrote into config.toml, between its marker comments.
OLD_BLOCK = f"""\
# relaybay: added by `manage.py connect codex`; `manage.py disconnect codex` takes it out.
[mcp_servers.relaybay]
url = "{URL}/mcp"
http_headers = {{ "Authorization" = "Bearer {TOKEN}" }}
# relaybay: end
"""
PERSONS_TAIL = """\
[profiles.work]
model = "o3"  # for work

[mcp_servers.mine]
command = "echo"
args = ["hi"]
"""


@pytest.fixture(autouse=True)
def data_folder(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".gemini").mkdir()
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def target(home, said=None, **changes):
    values = dict(url=URL, token=TOKEN, home=home, cli=None, dry_run=False, say=said.append if said is not None else lambda line: None)
    values.update(changes)
    return Target(**values)


def holding_the_token(folder):
    found = []
    for path in Path(folder).rglob("*"):
        if path.is_file() and not path.is_symlink() and TOKEN.encode() in path.read_bytes():
            found.append(path)
    return found


def contents(folder):
    return {path: path.read_bytes() for path in sorted(Path(folder).rglob("*")) if path.is_file()}


def test_a_block_that_lost_its_end_marker_goes_and_what_follows_it_stays(home):
    config = home / ".codex" / "config.toml"
    config.write_text('model = "gpt-5"\n\n' + OLD_BLOCK.replace("# relaybay: end\n", "") + "\n" + PERSONS_TAIL)
    said = []
    codex.disconnect(target(home, said))
    assert config.read_text() == 'model = "gpt-5"\n\n' + PERSONS_TAIL
    assert holding_the_token(home) == []


def test_codex_rewriting_its_config_with_mcp_add_does_not_hide_relaybays_server(home):
    # The real Codex CLI turns the inline headers into a table and drops the comments.
    config = home / ".codex" / "config.toml"
    config.write_text('model = "gpt-5"\n\n' + OLD_BLOCK)
    env = {**os.environ, "CODEX_HOME": str(home / ".codex"), "HOME": str(home)}
    subprocess.run([str(CODEX_BIN), "mcp", "add", "mine", "--", "echo", "hi"], env=env, check=True, capture_output=True, timeout=60)
    rewritten = config.read_text()
    assert "[mcp_servers.relaybay.http_headers]" in rewritten and "# relaybay: added" not in rewritten
    codex.disconnect(target(home))
    assert tomllib.loads(config.read_text()) == {"model": "gpt-5", "mcp_servers": {"mine": {"command": "echo", "args": ["hi"]}}}
    assert holding_the_token(home) == []
    # connected again, and Codex rewrites the file once more: disconnect still finds relaybay's
    codex.connect(target(home))
    subprocess.run([str(CODEX_BIN), "mcp", "add", "other", "--", "echo", "ho"], env=env, check=True, capture_output=True, timeout=60)
    assert "relaybay" in tomllib.loads(config.read_text())["mcp_servers"]
    codex.disconnect(target(home))
    assert set(tomllib.loads(config.read_text())["mcp_servers"]) == {"mine", "other"}


def test_a_read_only_file_stops_the_whole_connect_before_anything_changes(home):
    config, hooks = home / ".codex" / "config.toml", home / ".codex" / "hooks.json"
    config.write_text(PERSONS_TAIL)
    config.chmod(0o444)
    before = contents(home)
    with pytest.raises(ConnectError, match=r"config.toml is read-only: relaybay leaves it as it is\. Make it writable"):
        codex.connect(target(home))
    assert contents(home) == before and not hooks.exists()


@pytest.mark.parametrize("kind", ["folder", "not UTF-8", "a link to nothing"])
def test_a_settings_file_relaybay_cannot_safely_edit_is_refused_with_a_sentence(home, kind):
    path = home / ".gemini" / "settings.json"
    if kind == "folder":
        path.mkdir()
        phrase = "is a folder, where the CLI reads a file"
    elif kind == "not UTF-8":
        path.write_bytes(b'{"ui": "\xff"}')
        phrase = r"is not UTF-8 text \(byte 8\)"
    else:
        path.symlink_to(home / "gone.json")
        phrase = "is a symbolic link to .*gone.json, which does not exist"
    before = contents(home)
    for step in (gemini.connect, gemini.disconnect):
        with pytest.raises(ConnectError, match=phrase + r".* Nothing was changed\."):
            step(target(home))
    assert contents(home) == before


def test_a_link_is_followed_on_purpose_and_stays_a_link(home, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "gemini-settings.json"
    real.write_text('{"ui": {"theme": "dark"}}\n')
    link = home / ".gemini" / "settings.json"
    link.symlink_to(real)
    said = []
    gemini.connect(target(home, said))
    assert link.is_symlink() and "relaybay" in json.loads(real.read_text())["mcpServers"]
    assert any(f"changed {real} (through the link {link})" in line for line in said), said
    gemini.disconnect(target(home))
    assert link.is_symlink() and real.read_text() == '{"ui": {"theme": "dark"}}\n'


def test_a_full_disk_leaves_every_file_as_it_was(home, settings):
    # hooks.json larger than the file size limit: its new text cannot be written; config.toml's could.
    hooks = home / ".codex" / "hooks.json"
    hooks.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x" * 4000}]}]}}))
    (home / ".codex" / "config.toml").write_text(PERSONS_TAIL)
    before = contents(home)
    script = (
        "import django; django.setup()\n"
        "from pathlib import Path\n"
        "from install.connectors import ConnectError, Target, codex\n"
        f"t = Target(url={URL!r}, token={TOKEN!r}, home=Path({str(home)!r}), cli=None, dry_run=False, say=print)\n"
        "try:\n    codex.connect(t)\nexcept ConnectError as e:\n    print('REFUSED', e)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "relaybay.settings", "RELAYBAY_DATA": str(settings.DATA_DIR), "CODEX_HOME": str(home / ".codex")}
    done = subprocess.run(["bash", "-c", 'ulimit -f 2 && exec "$0" -c "$1"', sys.executable, script], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "REFUSED relaybay could not write beside" in done.stdout and "is the disk full? Nothing was changed." in done.stdout, done
    assert contents(home) == before  # no temporary file left either


def test_a_reader_polling_the_settings_never_sees_them_half_written(home):
    path = home / ".gemini" / "settings.json"
    path.write_text(json.dumps({"ui": {"notes": ["n" * 100] * 20000}}))  # 2 MB
    invalid, reads = [], [0]
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            try:
                json.loads(path.read_text())
            except ValueError as error:
                invalid.append(error)
            reads[0] += 1

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for _ in range(15):
            gemini.connect(target(home))
            gemini.disconnect(target(home))
    finally:
        stop.set()
        reader.join()
    assert reads[0] > 30 and invalid == []


def test_one_backup_made_once_without_the_token_and_none_left_holding_it(home, settings):
    path = home / ".gemini" / "settings.json"
    path.write_text('{"ui": {"theme": "dark"}}\n')
    backup = home / ".gemini" / "settings.json.relaybay-backup"
    gemini.connect(target(home))
    assert backup.read_text() == '{"ui": {"theme": "dark"}}\n'
    gemini.connect(target(home, token="a-rotated-token"))
    assert backup.read_text() == '{"ui": {"theme": "dark"}}\n'
    # An earlier relaybay's backup held the token: disconnect removes it.
    (home / ".codex" / "config.toml.relaybay-backup").write_text(OLD_BLOCK)
    (home / ".codex" / "config.toml").write_text(OLD_BLOCK)
    codex.disconnect(target(home))
    gemini.disconnect(target(home))
    assert holding_the_token(home) == [] and holding_the_token(settings.DATA_DIR) == []
    assert not list((settings.DATA_DIR / "hook-config").glob("*.conf"))


def test_the_cli_changing_the_file_meanwhile_stops_the_change(home, monkeypatch):
    path = home / ".gemini" / "settings.json"
    path.write_text('{"ui": {}}\n')
    real_apply_read = json_settings.read_text
    calls = []

    def read_then_codex_writes(p):
        text = real_apply_read(p)
        calls.append(p)
        return text

    from install.connectors import edits
    original = edits.read_text

    def changed_meanwhile(p):
        if calls:  # the check before the rename: the CLI wrote the file since
            path.write_text('{"ui": {"theme": "light"}}\n')
        return original(p)

    monkeypatch.setattr(json_settings, "read_text", read_then_codex_writes)
    monkeypatch.setattr(edits, "read_text", changed_meanwhile)
    with pytest.raises(ConnectError, match="changed while relaybay was editing it"):
        gemini.connect(target(home))
    assert path.read_text() == '{"ui": {"theme": "light"}}\n'
    assert not list(home.rglob("*.tmp")) and not (home / ".gemini" / "settings.json.relaybay-backup").exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000\nRELAYBAY_TOKEN=mine", "http://127.0.0.1:8000 x", "ftp://host", "http://user:pw@host:1"])
def test_an_address_that_would_add_to_a_configuration_file_is_refused_before_anything_is_written(url, settings, tmp_path):
    with pytest.raises(CommandError, match="--url"):
        call_command("claude_config", "--url", url, "--output", str(tmp_path / "out.json"))
    assert not (tmp_path / "out.json").exists() and not (settings.DATA_DIR / "hook-config").exists()


def test_a_spool_path_with_a_line_break_is_refused(tmp_path):
    with pytest.raises(CommandError, match="--spool takes one line"):
        call_command("claude_config", "--spool", "/tmp/a\nRELAYBAY_URL=http://elsewhere", "--output", str(tmp_path / "out.json"))


def test_connects_reachability_check_sends_nothing_to_a_listener_of_another_account(impostor):
    url, accepted = impostor
    with pytest.raises(CommandError, match="relaybay is not what answers at .*belongs to another account \\(uid 65534\\)"):
        reach_relaybay(url, TOKEN)
    assert accepted() and set(accepted()) == {""}
