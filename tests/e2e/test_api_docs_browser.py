"""/api/docs in a real browser against a real relaybay under daphne, with every request off the
machine blocked: Swagger UI comes from relaybay's own static files and lists the operations
once the owner has logged in; before that the browser is sent to the login page."""

import os
import urllib.error
import urllib.request
from pathlib import Path

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import CHROMIUM, CHROMIUM_ARGS, log_in, start_board, stop_board

# What this module tests is the client's or the page's own behaviour, which neither database
# nor channel layer changes: make test runs it once, on the embedded pass.
pytestmark = pytest.mark.embedded_only

expect = playwright.expect
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = start_board(tmp_path_factory.mktemp("docs"))
    yield server
    stop_board(server)


@pytest.fixture
def page(live):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium", pytrace=False)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.offsite = []

        def only_relaybay(route):
            if route.request.url.startswith(live.url):
                route.continue_()
            else:
                page.offsite.append(route.request.url)
                route.abort()

        page.route("**/*", only_relaybay)
        yield page
        browser.close()


def test_the_docs_render_their_operations_offline_for_the_owner(page, live):
    page.goto(f"{live.url}/api/docs")
    assert "/login/" in page.url
    log_in(page, live)
    page.goto(f"{live.url}/api/docs")
    expect(page.locator(".opblock").first).to_be_visible(timeout=10_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/hooks" in paths and "/api/message_send" in paths
    assert page.offsite == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "api-docs.png", full_page=True)


def test_the_live_server_refuses_the_description_without_the_token_and_answers_unknown_routes_in_json(live):
    for path, status in [("/api/openapi.json", 401), ("/api/no-such-route", 404)]:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{live.url}{path}", timeout=10)
        assert refused.value.code == status
        assert refused.value.headers["Content-Type"].startswith("application/json")
    request = urllib.request.Request(f"{live.url}/api/openapi.json", headers={"Authorization": f"Bearer {live.token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
