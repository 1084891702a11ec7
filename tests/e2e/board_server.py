"""A real relaybay with an owner account, for the browser tests and the board benchmark.

The server itself is tests/live_server.py's (fresh data folder, migrate, daphne on a free
loopback port); this adds the owner and the Chromium settings of these machines.
"""

import subprocess
import sys

from tests.live_server import MANAGE, REPO_ROOT, LiveRelaybay, server_env, start_relaybay, stop_relaybay

OWNER = ("owner", "owner-password-1")
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def manage(live, *args, **env):
    """Run a manage.py command against the live server's data folder."""
    environment = server_env(live.process.relaybay_data, live.token, **env)
    return subprocess.run(
        [sys.executable, str(MANAGE), *args], cwd=REPO_ROOT, env=environment, check=True, capture_output=True, text=True
    )


def start_board(tmp_path, **env):
    """A running relaybay (LiveRelaybay) whose owner can log in with OWNER."""
    live = LiveRelaybay(*start_relaybay(tmp_path, **env))
    manage(live, "createsuperuser", "--noinput", "--username", OWNER[0], "--email", "", DJANGO_SUPERUSER_PASSWORD=OWNER[1], **env)
    return live


def stop_board(live):
    stop_relaybay(live.process)


def log_in(page, live):
    page.goto(f"{live.url}/login/")
    page.fill("input[name=username]", OWNER[0])
    page.fill("input[name=password]", OWNER[1])
    page.click("button[type=submit]")
    page.wait_for_url(f"{live.url}/")


def shot(page, name):
    """A full-page screenshot kept in test-artifacts/ for a person to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"board-{name}.png", full_page=True)
