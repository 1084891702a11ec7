"""Fixtures for end-to-end tests: the scripted model server and the real Claude Code CLI."""

import os

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import CHROMIUM, CHROMIUM_ARGS, LAPTOP, board_with_alpha_and_beta, log_in, stop_board

from tests.e2e.claude_cli import parse_result, run_claude
from tests.e2e.model_server import ModelServer


@pytest.fixture
def model():
    server = ModelServer().start()
    yield server
    server.stop()


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def claude(model, project, home):
    """Run `claude -p` against the model server in an isolated project and HOME."""

    def run(prompt, **kwargs):
        completed = run_claude(prompt, model_url=model.url, cwd=project, home=home, **kwargs)
        assert completed.returncode == 0, completed.stderr
        return parse_result(completed)

    return run


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The board a browser module drives: relaybay with two sessions, alpha and beta. A module
    that needs another server defines its own `live`."""
    server = board_with_alpha_and_beta(tmp_path_factory.mktemp("board"))
    yield server
    stop_board(server)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright, one per test module."""
    if not os.path.exists(CHROMIUM):
        # Never a skip: a missing browser must fail the run (make test installs it).
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium", pytrace=False)
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()



@pytest.fixture
def context(browser):
    """A fresh browser context (no cookies) at a laptop's size."""
    context = browser.new_context(viewport=LAPTOP)
    yield context
    context.close()


@pytest.fixture
def page(context, live):
    """A page logged in as the owner to the module's `live` board."""
    page = context.new_page()
    log_in(page, live)
    return page
