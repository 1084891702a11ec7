"""Needs you in a real browser (Chromium): a notification for each new request naming the
session and the reason, whose click opens the request; the count in the title and the sidebar,
live; and the Needs you and Sessions pages at a phone's width (390 px), no element wider than
the viewport. Requests come from hook payloads as the hook client posts them."""

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import LAPTOP, log_in, shot, start_board, stop_board

expect = playwright.expect
PHONE = {"width": 390, "height": 844}
# Records each notification the page makes, through the real Notification API.
RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  window.__notes = [];
  function Recorded(title, options) {
    const note = new Real(title, options);
    window.__notes.push({title: title, body: (options || {}).body, note: note});
    return note;
  }
  Object.defineProperty(Recorded, "permission", {get: () => Real.permission});
  Recorded.requestPermission = (...args) => Real.requestPermission(...args);
  window.Notification = Recorded;
})();
"""
LONG = "npm run build -- --config=/home/someone/projects/a-rather-long-folder-name/with/many/parts/build.config.js && echo done"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = start_board(tmp_path_factory.mktemp("needs-you"))
    server.start_session("hook-web", "web", cwd="/home/someone/projects/a-rather-long-folder-name-without-breaks")
    server.start_session("hook-api", "api", cwd="/work/api")
    yield server
    stop_board(server)


def ask(live, hook_session, command):
    return live.hook("PermissionRequest", hook_session, tool_name="Bash", tool_input={"command": command}, relaybay_waits=True)["relaybay_request"]


def answer(live, pk):
    status, _ = live.post(f"/approvals/{pk}", {"decision": "deny"}, token=live.owner_token)
    assert status == 200


def notes(page):
    return page.evaluate("window.__notes.map(n => ({title: n.title, body: n.body}))")


def test_each_new_request_notifies_once_and_the_title_and_sidebar_count_it(browser, live):
    context = browser.new_context(viewport=LAPTOP, permissions=["notifications"])
    context.add_init_script(RECORD_NOTIFICATIONS)
    page = context.new_page()
    log_in(page, live)
    expect(page.locator("html")).to_have_attribute("data-live", "on", timeout=5000)
    expect(page).to_have_title("Sessions · relaybay")

    first = ask(live, "hook-web", "npm test")
    expect(page).to_have_title("(1) Sessions · relaybay", timeout=5000)
    expect(page.locator("#needs-you-count")).to_have_text("1")
    page.wait_for_function("window.__notes.length === 1")
    assert notes(page) == [{"title": "web needs you", "body": "permission to run Bash: npm test"}]

    second = ask(live, "hook-api", "make deploy")
    expect(page).to_have_title("(2) Sessions · relaybay", timeout=5000)
    page.wait_for_function("window.__notes.length === 2")
    assert notes(page)[1] == {"title": "api needs you", "body": "permission to run Bash: make deploy"}

    # The owner's own answers take requests away and notify nothing.
    answer(live, second)
    expect(page).to_have_title("(1) Sessions · relaybay", timeout=5000)
    page.wait_for_timeout(500)
    assert len(notes(page)) == 2

    # Clicking the notification opens the request.
    page.evaluate("window.__notes[0].note.onclick()")
    page.wait_for_url(f"**/needs-you/#request-{first}")
    expect(page.locator(f"#request-{first}")).to_contain_text("npm test")
    answer(live, first)
    expect(page).to_have_title("Needs you · relaybay", timeout=5000)
    expect(page.locator("#needs-you-count")).to_have_text("0")
    context.close()


def widest(page):
    """Elements that reach past the viewport's right edge, and the page's own scroll width."""
    return page.evaluate(
        """() => {
          const width = document.documentElement.clientWidth;
          const over = [];
          for (const el of document.querySelectorAll("body *")) {
            const box = el.getBoundingClientRect();
            if (box.width && box.right > width + 0.5) over.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + "." + el.className + " " + Math.round(box.right));
          }
          return {width: width, scroll: document.documentElement.scrollWidth, over: over.slice(0, 10)};
        }"""
    )


def test_needs_you_and_sessions_fit_a_phones_width(browser, live):
    ask(live, "hook-web", LONG)
    ask(live, "hook-web", "rm -rf ./node_modules")
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    log_in(page, live)
    for path, name in (("/needs-you/", "needs-you"), ("/", "sessions")):
        page.goto(f"{live.url}{path}")
        shot(page, f"phone-{name}")
        found = widest(page)
        assert found["scroll"] <= found["width"] and not found["over"], (path, found)
    # A card shows no empty line and says what its unread count counts; a session with none shows no bare 0.
    status, sent = live.post("/message_send", {"to": "web", "body": "for web", "session": "api", "hook_session": "hook-api"})
    assert status == 200, sent
    page.goto(f"{live.url}/")
    web, api = (page.locator("tr", has=page.get_by_role("link", name=name, exact=True)) for name in ("web", "api"))
    expect(web.locator("td.unread-count").get_by_role("link", name="1 unread", exact=True)).to_be_visible()
    expect(api.locator("td.unread-count")).to_be_hidden()
    assert not page.evaluate("() => [...document.querySelectorAll('table.session-rows td')].some(td => td.offsetHeight && !td.textContent.trim())")
    page.goto(f"{live.url}/needs-you/")
    buttons = page.locator(".request").first.get_by_role("button")
    expect(buttons).to_have_count(3)
    for i in range(3):
        box = buttons.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    context.close()


def test_a_sessions_page_events_files_and_search_fit_a_phones_width(browser, live):
    """Their tables scroll sideways in their own box: the page is never wider than the screen,
    and whatever reaches past its edge is inside a box that scrolls and ends within it."""
    live.hook("PreToolUse", "hook-web", tool_name="Bash", tool_input={"command": LONG})
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    log_in(page, live)
    page.get_by_role("link", name="web", exact=True).first.click()
    page.wait_for_url("**/sessions/*/")
    session_path = page.url.removeprefix(live.url)
    for path, name in ((session_path, "session"), ("/events/", "events"), ("/files/", "files"), ("/search/?q=web", "search")):
        page.goto(f"{live.url}{path}")
        shot(page, f"phone-{name}")
        found = page.evaluate(
            """() => {
              const width = document.documentElement.clientWidth;
              const loose = [];
              for (const el of document.querySelectorAll("body *")) {
                const box = el.getBoundingClientRect();
                if (!box.width || box.right <= width + 0.5) continue;
                let up = el.parentElement, held = false;
                while (up && !held) {
                  const style = getComputedStyle(up);
                  held = ["auto", "scroll"].includes(style.overflowX) && up.getBoundingClientRect().right <= width + 0.5;
                  up = up.parentElement;
                }
                if (!held) loose.push(el.tagName.toLowerCase() + "." + el.className + " " + Math.round(box.right));
              }
              return {width: width, scroll: document.documentElement.scrollWidth, loose: loose.slice(0, 10)};
            }"""
        )
        assert found["scroll"] <= found["width"] and not found["loose"], (path, found)
    context.close()
