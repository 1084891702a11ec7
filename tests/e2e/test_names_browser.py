"""Names in the owner's board, in Chromium: a plain Claude Code session shows under its folder's
name (never its session id), and when the owner renames it, every page, sessions_list and the
messages it sent show the new name at once (docs/rules.md §1.5)."""

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import log_in, shot

# What this module tests is the client's or the page's own behaviour, which neither database
# nor channel layer changes: make test runs it once, on the embedded pass.
pytestmark = pytest.mark.embedded_only

expect = playwright.expect
LIVE_TIMEOUT = 5000
SESSION_ID = "5b0c1d9e-7a31-4c52-9d1e-plain-gamma"


def test_the_owner_renames_a_plain_session_and_every_page_shows_the_new_name(page, live):
    live.hook("SessionStart", SESSION_ID, source="startup", cwd="/work/gamma")
    status, sent = live.post("/message_send", {"to": "alpha", "body": "gamma reporting in", "hook_session": SESSION_ID})
    assert status == 200 and sent["sender"] == "gamma", sent

    log_in(page, live)
    page.goto(f"{live.url}/")
    rows = page.locator("#sessions-rows")
    expect(rows).to_contain_text("gamma")
    expect(rows).not_to_contain_text(SESSION_ID)

    page.locator("#sessions-rows a", has_text="gamma").first.click()
    page.fill("input[name=title]", "gamma-docs")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("main h1")).to_contain_text("gamma-docs", timeout=LIVE_TIMEOUT)

    page.goto(f"{live.url}/messages/")
    row = page.locator(f"#message-{sent['id']}")
    expect(row).to_contain_text("gamma-docs")
    expect(row.locator("a", has_text="gamma-docs")).to_have_attribute("title", "sent as gamma")
    shot(page, "renamed-session")

    status, listed = live.get("/sessions_list")
    assert "gamma-docs" in {s["name"] for s in listed["sessions"]}
    status, answer = live.post("/message_send", {"to": "gamma-docs", "body": "welcome back", "session": "alpha", "hook_session": "hook-alpha"})
    assert status == 200, answer
