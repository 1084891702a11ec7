"""The owner's board in a real browser (Debian's Chromium driven by Playwright) against a real
relaybay under daphne: the page changes live, without reloading, as hooks, sends and acks
arrive through the API. Screenshots of every page go to test-artifacts/.
"""

import re

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import log_in, shot, start_board, stop_board
from tests.live_server import LiveRelaybay, drop_database, scale_out_env, start_relaybay, stop_relaybay

expect = playwright.expect

LIVE_TIMEOUT = 5000



def open_live(page, live, path):
    """Open a page, wait for its websocket, and mark the window so a reload would show."""
    page.goto(f"{live.url}{path}")
    expect(page.locator("html")).to_have_attribute("data-live", "on", timeout=LIVE_TIMEOUT)
    page.evaluate("window.__notReloaded = true")


def assert_not_reloaded(page):
    assert page.evaluate("window.__notReloaded") is True


def send(live, body, to, sender, hook, **extra):
    status, answer = live.post("/message_send", {"body": body, "to": to, "session": sender, "hook_session": hook, **extra})
    assert status == 200, answer
    return answer["id"]


def session_id(live, name):
    status, answer = live.get("/sessions_list")
    return int(next(s["handle"][2:] for s in answer["sessions"] if s["name"] == name))


@pytest.mark.embedded_only  # the login form and the page's own rendering
def test_logging_in_shows_the_sessions(browser, live):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(f"{live.url}/messages/")
    assert "/login/" in page.url
    shot(page, "login")
    log_in(page, live)
    expect(page.locator("#sessions-rows")).to_contain_text("alpha")
    context.close()


def test_a_message_appears_and_its_marks_change_live(page, live):
    open_live(page, live, "/messages/")
    message_id = send(live, "Can you review the parser change?", "beta", "alpha", "hook-alpha")
    row = page.locator(f"#message-{message_id}")
    expect(row).to_contain_text("Can you review the parser change?", timeout=LIVE_TIMEOUT)
    expect(row.locator(".mark-waiting")).to_have_text("not delivered yet")
    expect(row).to_contain_text("it is idle and no wake-up hook of it is waiting; it sees this at its next prompt.")

    answer = live.hook("UserPromptSubmit", "hook-beta", prompt="next", cwd="/work/beta")
    assert "Can you review the parser change?" in answer["hookSpecificOutput"]["additionalContext"]
    expect(row.locator(".mark-delivered")).to_be_visible(timeout=LIVE_TIMEOUT)
    expect(row.locator(".mark-waiting")).to_have_count(0)

    status, _ = live.post("/message_ack", {"message_id": message_id, "session": "beta", "hook_session": "hook-beta"})
    assert status == 200
    expect(row.locator(".mark-read")).to_have_text("read", timeout=LIVE_TIMEOUT)
    assert_not_reloaded(page)
    shot(page, "messages")


def test_the_unread_count_on_the_sessions_page_updates_live(page, live):
    beta = session_id(live, "beta")
    open_live(page, live, "/")
    unread = page.locator(f"#session-{beta} td.num")
    expect(unread).to_have_text("0")
    first = send(live, "one", "beta", "alpha", "hook-alpha")
    expect(unread).to_have_text("1", timeout=LIVE_TIMEOUT)
    send(live, "two", "beta", "alpha", "hook-alpha")
    expect(unread).to_have_text("2", timeout=LIVE_TIMEOUT)
    live.hook("UserPromptSubmit", "hook-beta", prompt="next", cwd="/work/beta")
    status, answer = live.post("/message_ack", {"message_id": first, "session": "beta", "hook_session": "hook-beta"})
    assert status == 200 and answer["marked"] == 1, answer
    expect(unread).to_have_text("1", timeout=LIVE_TIMEOUT)
    assert_not_reloaded(page)
    shot(page, "sessions")


def test_an_inbox_item_appears_live_and_is_marked_seen(page, live):
    live.start_session("hook-ping", "ping", cwd="/work/ping")
    live.start_session("hook-pong", "pong", cwd="/work/pong")
    open_live(page, live, "/inbox/")
    count = page.locator("#inbox-count")
    expect(count).to_have_text("0")
    parent = send(live, "depth 0", "pong", "ping", "hook-ping")
    players = [("pong", "hook-pong"), ("ping", "hook-ping")]
    for depth in range(1, 9):
        name, hook = players[(depth - 1) % 2]
        parent = send(live, f"depth {depth}", None, name, hook, in_reply_to=parent)
    status, answer = live.post("/message_send", {"body": "depth 9", "in_reply_to": parent, "session": "pong", "hook_session": "hook-pong"})
    assert status == 403 and "Inbox" in answer["detail"]

    item = page.locator(f"#inbox-{parent}")
    expect(item).to_contain_text("a reply to it was refused: too deep", timeout=LIVE_TIMEOUT)
    expect(count).to_have_text("1", timeout=LIVE_TIMEOUT)
    assert_not_reloaded(page)
    shot(page, "inbox")
    item.get_by_role("button", name="Mark seen").click()
    expect(page.locator(".flash")).to_contain_text(f"M-{parent} marked seen")
    expect(page.locator(f"#inbox-{parent}")).to_have_count(0)
    expect(count).to_have_text("0")


def test_a_comment_from_the_composer_is_delivered_at_the_next_hook(page, live):
    alpha = session_id(live, "alpha")
    open_live(page, live, f"/sessions/{alpha}/")
    page.fill("#composer textarea[name=body]", "Owner here: please rebase on main.")
    page.click("#composer button")
    expect(page.locator("#composer .composer-status")).to_contain_text("Comment saved for alpha; it reaches the session at its next hook")
    expect(page.locator("#composer textarea")).to_have_value("")
    comment = page.locator("#session-comments tbody tr").first
    expect(comment).to_contain_text("Owner here: please rebase on main.")
    expect(comment).to_contain_text("not delivered yet")
    page.evaluate("window.__notReloaded = true")

    answer = live.hook("UserPromptSubmit", "hook-alpha", prompt="carry on", cwd="/work/alpha")
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "Owner here: please rebase on main." in context and "from the owner" in context
    expect(comment).to_contain_text("UserPromptSubmit via hook-alpha", timeout=LIVE_TIMEOUT)
    assert_not_reloaded(page)
    shot(page, "session")


@pytest.mark.embedded_only  # the page's own layout
def test_long_words_do_not_widen_the_page_at_laptop_width(page, live):
    send(live, "x" * 4000, "beta", "alpha", "hook-alpha")
    for path in ("/messages/", f"/sessions/{session_id(live, 'beta')}/"):
        page.goto(f"{live.url}{path}")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path


def seed_a_working_day(live):
    """A few sessions of one piece of work, as the owner would see them mid-afternoon."""
    live.start_session("hook-api", "api-refactor", cwd="/home/me/payments")
    live.start_session("hook-docs", "docs-writer", cwd="/home/me/payments/docs")
    live.start_session("hook-old", "migration-spike", cwd="/home/me/payments")
    live.hook("SessionEnd", "hook-old", cwd="/home/me/payments", reason="exit")
    live.hook("SessionStart", "hook-3f9c2a71", cwd="/home/me/scratch")
    status, _ = live.post("/desktop", {"desktop_id": "desk-7", "title": "ui-review", "folder": "/home/me/payments-ui", "status": "active"})
    assert status == 200
    live.hook("UserPromptSubmit", "hook-api", prompt="Split the ledger module", cwd="/home/me/payments")
    live.hook("PreToolUse", "hook-api", tool_name="Bash", tool_input={"command": "pytest -q"}, cwd="/home/me/payments")
    question = send(live, "The ledger split changes the public API: can you update the reference docs?", "docs-writer", "api-refactor", "hook-api")
    send(live, "Which endpoints moved?", None, "docs-writer", "hook-docs", in_reply_to=question)
    send(live, "Please check the new error messages in the UI.", "ui-review", "api-refactor", "hook-api")
    send(live, "Old spike notes are in /tmp/spike.md", "migration-spike", "api-refactor", "hook-api")
    live.post("/desktop/edge", {"sender": "ui-review", "recipient": "api-refactor"})
    live.hook("UserPromptSubmit", "hook-api", prompt="continue", cwd="/home/me/payments")


@pytest.mark.embedded_only  # the pages' own rendering and forms (their SQL: tests/test_board_*.py on both databases)
def test_a_tour_of_every_page(page, live):
    seed_a_working_day(live)
    page.goto(f"{live.url}/tasks/")
    page.fill("input[name=title]", "Payments API v2")
    page.get_by_role("button", name="Create task").click()
    assert re.search(r"/tasks/\d+/$", page.url)
    for name in ("api-refactor", "docs-writer", "desk-7"):
        page.fill("input[name=session]", name)
        page.get_by_role("button", name="Attach").click()
        expect(page.locator("#task-sessions")).to_contain_text(name if name != "desk-7" else "ui-review")
    shot(page, "task")
    api = session_id(live, "api-refactor")
    page.goto(f"{live.url}/sessions/{api}/")
    page.fill("#composer textarea[name=body]", "Keep the old endpoints for one release.")
    page.click("#composer button")
    expect(page.locator("#session-comments")).to_contain_text("Keep the old endpoints")
    for name, path in [
        ("sessions", "/"), ("session", f"/sessions/{api}/"), ("tasks", "/tasks/"), ("messages", "/messages/"),
        ("map", "/map/"), ("events", "/events/"), ("search", "/search/?q=ledger"), ("thread", f"/messages/{1}/"),
        ("inbox", "/inbox/"),
    ]:
        page.goto(f"{live.url}{path}")
        expect(page.locator("main h1")).to_be_visible()
        shot(page, name)
    page.goto(f"{live.url}/map/")
    expect(page.locator("#map-svg svg .node")).not_to_have_count(0)
    expect(page.locator("#map-svg")).to_contain_text("ui-review")


def test_the_search_finds_a_hook_written_just_now_and_never_a_message_text(page, live):
    """docs/rules.md §5.5, §4.7: the search indexes the feed rows written since the last one it
    indexed before it matches (SQLite writes them in batches); a message's text, sent or in the
    hook events of a message tool's call, is never found."""
    live.hook("PreToolUse", "hook-alpha", cwd="/work/alpha", tool_name="Bash", tool_input={"command": "make wombat-7731"})
    broadcast = {"folder": "/work", "body": "numbat-5519: freeze merges"}
    live.hook("PreToolUse", "hook-alpha", cwd="/work/alpha", tool_name="mcp__relaybay__message_broadcast", tool_input=broadcast)
    send(live, "numbat-5519 again", "beta", "alpha", "hook-alpha")
    page.goto(f"{live.url}/search/?q=wombat")
    expect(page.locator("main")).to_contain_text("make wombat-7731")
    page.goto(f"{live.url}/search/?q=numbat")
    expect(page.locator("main")).to_contain_text("0 results")
    page.goto(f"{live.url}/search/?q=PreToolUse relaybay broadcast")
    expect(page.locator("main")).to_contain_text("[not stored: message text]")
    shot(page, "search-feed")


@pytest.mark.scale_out
def test_a_ping_crosses_server_processes_through_redis(browser, tmp_path):
    """docs/rules.md §5.6 scale-out: the page is served by one process, the message is sent to
    another; the ping reaches the page through the Redis channel layer."""
    env = scale_out_env()  # fails, never skips, when PostgreSQL or Redis does not answer
    first = second = None
    try:
        first = start_board(tmp_path / "a", **env)
        second = LiveRelaybay(*start_relaybay(tmp_path / "b", token=first.token, **env))
        second.start_session("hook-north", "north", cwd="/work/north")
        second.start_session("hook-south", "south", cwd="/work/south")
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        log_in(page, first)
        open_live(page, first, "/messages/")
        message_id = send(second, "Sent to the other process", "south", "north", "hook-north")
        expect(page.locator(f"#message-{message_id}")).to_contain_text("Sent to the other process", timeout=LIVE_TIMEOUT)
        second.hook("UserPromptSubmit", "hook-south", prompt="go", cwd="/work/south")
        expect(page.locator(f"#message-{message_id} .mark-delivered")).to_be_visible(timeout=LIVE_TIMEOUT)
        assert_not_reloaded(page)
        context.close()
    finally:
        for server in (first, second):
            if server is not None:
                stop_relaybay(server.process)
        drop_database(env["DATABASE_URL"])
