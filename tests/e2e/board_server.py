"""A real relaybay with an owner account, for the browser tests.

The server is tests/devserver.py's, on the test run's configuration (tests/live_server.py);
this adds the owner, and the Chromium settings of these machines.
"""

import subprocess
import sys

from tests import devserver
from tests.devserver import CHROMIUM, CHROMIUM_ARGS  # noqa: F401
from tests.live_server import MANAGE, REPO_ROOT, LiveRelaybay, server_env, start_relaybay, stop_relaybay

OWNER = ("owner", "owner-password-1")
ARTIFACTS = REPO_ROOT / "test-artifacts"


def manage(live, *args, **env):
    """Run a manage.py command against the live server's data folder."""
    environment = server_env(live.process.relaybay_data, live.token, **env)
    return subprocess.run(
        [sys.executable, str(MANAGE), *args], cwd=REPO_ROOT, env=environment, check=True, capture_output=True, text=True
    )


def start_board(tmp_path, **env):
    """A running relaybay (LiveRelaybay) whose owner can log in with OWNER."""
    live = LiveRelaybay(*start_relaybay(tmp_path, **env))
    live.process.relaybay_server.create_owner(*OWNER)
    return live


LAPTOP = {"width": 1280, "height": 800}


def board_with_alpha_and_beta(tmp_path):
    """A board with two live exactly linked sessions, alpha and beta, as the browser tests use."""
    server = start_board(tmp_path)
    server.start_session("hook-alpha", "alpha", cwd="/work/alpha")
    server.start_session("hook-beta", "beta", cwd="/work/beta")
    return server


def stop_board(live):
    stop_relaybay(live.process)


def log_in(page, live):
    devserver.log_in(page, live.url, *OWNER)


def shot(page, name):
    """A full-page screenshot kept in test-artifacts/ for a person to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"board-{name}.png", full_page=True)
