"""One address: `make run` records where it serves, and every command uses it when
RELAYBAY_URL is not set; the start-up output gives the one line that connects every Claude Code
session, and shows the owner's password only once."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.e2e.claude_cli import claude_bin
from tests.live_server import MANAGE, REPO_ROOT, free_port

NOT_PASSED = ("RELAYBAY_URL", "RELAYBAY_HOST", "RELAYBAY_PORT", "RELAYBAY_TOKEN", "DATABASE_URL", "REDIS_URL", "RELAYBAY_DATA")


def command_env(data_dir):
    """A shell's environment with no relaybay address in it: only the data folder."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_PASSED and k != "DJANGO_SETTINGS_MODULE"}
    return {**env, "RELAYBAY_DATA": str(data_dir), "PYTHONUNBUFFERED": "1"}


def manage(data_dir, *args):
    done = subprocess.run([sys.executable, str(MANAGE), *args], cwd=REPO_ROOT, env=command_env(data_dir), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def answers(url):
    try:
        with urllib.request.urlopen(f"{url}/login/", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def make_run(tmp_path_factory):
    """`make run PORT=<a free port>` on a fresh data folder (the install step is taken as done:
    `-o` tells make not to remake the virtualenv), one for the module: each test reads its own
    part of the install (the recorded address, the start-up output)."""
    folder = tmp_path_factory.mktemp("make-run")
    data_dir = folder / "data"
    port = free_port()
    log = folder / "make-run.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["make", "-o", ".venv/.installed", "run", f"PORT={port}"],
            cwd=REPO_ROOT, env=command_env(data_dir), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while not answers(url):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    yield data_dir, port, log
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=15)


@pytest.mark.embedded_only  # `make run` serves the embedded default whatever the pass's services
def test_commands_without_relaybay_url_reach_the_port_make_run_serves(make_run):
    data_dir, port, log = make_run
    assert (data_dir / "address").read_text().strip() == f"http://127.0.0.1:{port}"

    config = json.loads(manage(data_dir, "claude_config", "--session", "porter").stdout)
    hook_config = Path(config["env"]["RELAYBAY_HOOK_CONFIG"]).read_text()
    assert f"RELAYBAY_URL=http://127.0.0.1:{port}\n" in hook_config
    assert config["mcpServers"]["relaybay"]["env"]["RELAYBAY_URL"] == f"http://127.0.0.1:{port}"

    manage(data_dir, "shell", "-c", "from sessions_app.actions import do_register_desktop; do_register_desktop(desktop_id='d-porter', title='porter')")
    written = manage(data_dir, "comment", "porter", "over the recorded address")
    assert "failed" not in written.stdout + written.stderr
    # The comment's live update went through the server on that port (in-memory channel layer).
    deadline = time.monotonic() + 10
    while '"POST /api/relay" 204' not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)


@pytest.mark.embedded_only  # `make run` serves the embedded default whatever the pass's services
def test_start_up_output_gives_the_one_line_that_connects_every_session_and_it_does(make_run, tmp_path):
    data_dir, port, log = make_run
    [line] = [line.strip() for line in log.read_text().splitlines() if "manage.py connect claude" in line]
    assert line == ".venv/bin/python manage.py connect claude"
    # The line as printed (the CLI named, as it is on a person's PATH), in a fresh HOME.
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, *line.split()[1:], "--cli", claude_bin()],
        cwd=REPO_ROOT, env={**command_env(data_dir), "HOME": str(home)}, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"reaches relaybay at http://127.0.0.1:{port}" in done.stdout
    options = json.loads((home / ".claude" / "settings.json").read_text())["pluginConfigs"]["relaybay@relaybay-local"]["options"]
    assert options["url"] == f"http://127.0.0.1:{port}"


@pytest.mark.embedded_only  # `make run` serves the embedded default whatever the pass's services
def test_start_up_output_mentions_the_login_service_once(make_run):
    data_dir, port, log = make_run
    said = [line.strip() for line in log.read_text().splitlines() if "manage.py service install" in line]
    assert said == ["To have relaybay start at login and restart if it stops: .venv/bin/python manage.py service install"]


@pytest.mark.django_db
def test_the_owner_password_is_shown_once_then_where_to_find_or_reset_it(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.RELAYBAY_ADDRESS_FILE = tmp_path / "address"

    def start():
        out = StringIO()
        call_command("setup_owner", stdout=out)
        return out.getvalue()

    first = start()
    password = (tmp_path / "owner-password").read_text().strip()
    assert password in first and "shown once" in first
    again = start()
    assert password not in again
    assert str(tmp_path / "owner-password") in again and ".venv/bin/python manage.py changepassword owner" in again
