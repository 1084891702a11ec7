"""Machines on the Sessions page, in Chromium: each row names the machine its session runs on,
the Machine filter keeps one machine's sessions, and at a phone's width (390 px) no element is
wider than the viewport (docs/rules.md §6)."""

import json

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import log_in, manage, shot, start_board, stop_board
from tests.e2e.test_needs_you_browser import PHONE, widest

# What this module tests is the page's own behaviour; the filter's query runs on both databases
# in tests/test_machines.py.
pytestmark = pytest.mark.embedded_only

expect = playwright.expect
LAPTOP_PROOF = "a" * 64


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """web runs here; api on the machine named laptop, proven by its process through laptop's token."""
    server = start_board(tmp_path_factory.mktemp("machines"))
    laptop = json.loads(manage(server, "machine", "add", "a-laptop-with-a-rather-long-machine-name", "--json").stdout)
    server.start_session("hook-web", "web", cwd="/work/web")
    payload = {"hook_event_name": "SessionStart", "session_id": "hook-api", "source": "startup", "cwd": "/work/api", "relaybay_session": "api"}
    status, answer = server.post("/hooks", payload, {"X-Relaybay-Process": LAPTOP_PROOF}, token=laptop["token"])
    assert status == 200, answer
    yield server
    stop_board(server)


def test_each_row_names_its_machine_and_the_filter_keeps_one_machine_s(page, live):
    rows = page.locator("#sessions-rows")
    expect(rows.locator("tr", has_text="api").locator("td.machine")).to_have_text("a-laptop-with-a-rather-long-machine-name")
    expect(rows.locator("tr", has_text="web").locator("td.machine")).to_have_text("here")

    page.select_option("select[name=machine]", "a-laptop-with-a-rather-long-machine-name")
    page.get_by_role("button", name="Filter").click()
    expect(rows.locator("tbody tr")).to_have_count(1)
    expect(rows).to_contain_text("api")
    expect(page.locator("select[name=machine]")).to_have_value("a-laptop-with-a-rather-long-machine-name")

    page.select_option("select[name=machine]", "here")
    page.get_by_role("button", name="Filter").click()
    expect(rows.locator("tbody tr")).to_have_count(1)
    expect(rows).to_contain_text("web")


def test_the_sessions_page_with_machines_fits_a_phone_s_width(browser, live):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    log_in(page, live)
    for query in ("", "?machine=a-laptop-with-a-rather-long-machine-name"):
        page.goto(f"{live.url}/{query}")
        expect(page.locator("#sessions-rows td.machine").first).to_be_visible()
        found = widest(page)
        assert found["scroll"] <= found["width"] and not found["over"], (query, found)
    shot(page, "phone-sessions-machines")
    context.close()
