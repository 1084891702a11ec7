"""What a new owner meets on the board in the first hour, in a real browser (Chromium via
Playwright) against a real relaybay: the login page's layout, times that keep counting, a
comment that survives the server going down, comments from a message's row, the Map's size.
Screenshots go to test-artifacts/.
"""

import re

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import LAPTOP, OWNER, log_in, shot, start_board, stop_board

# What this module tests is the client's or the page's own behaviour, which neither database
# nor channel layer changes: make test runs it once, on the embedded pass.
pytestmark = pytest.mark.embedded_only

expect = playwright.expect

LIVE_TIMEOUT = 5000


def box(locator):
    found = locator.bounding_box()
    assert found is not None, f"{locator} is not shown"
    return found


def session_id(live, name):
    _, answer = live.get("/sessions_list")
    return int(next(s["handle"][2:] for s in answer["sessions"] if s["name"] == name))


def open_live(page, url):
    page.goto(url)
    expect(page.locator("html")).to_have_attribute("data-live", "on", timeout=LIVE_TIMEOUT)


def test_the_login_form_is_the_full_width_of_its_card_in_the_middle_of_the_page(context, live):
    page = context.new_page()
    page.goto(f"{live.url}/login/")
    card, form = box(page.locator(".panel.login")), box(page.locator(".panel.login form"))
    assert card["width"] >= 360, "the card is not squeezed into a sidebar column"
    assert abs(card["x"] + card["width"] / 2 - LAPTOP["width"] / 2) <= 2, "the card is centred on the page"
    assert form["width"] >= card["width"] - 2 * 24, "the form spans its card"
    for field in ("input[name=username]", "input[name=password]", "button[type=submit]"):
        assert abs(box(page.locator(field))["width"] - form["width"]) <= 1, f"{field} spans the form"
    shot(page, "login")

    page.fill("input[name=username]", OWNER[0])
    page.fill("input[name=password]", "not the password")
    page.click("button[type=submit]")
    error = page.locator(".panel.login .flash li.error")
    expect(error).to_contain_text("did not match")
    line_height = page.evaluate("parseFloat(getComputedStyle(document.body).lineHeight)")
    assert box(error)["width"] >= form["width"] - 1, "the error spans the card"
    assert box(error)["height"] <= 3 * line_height + 12, "the error reads as a sentence, not a word per line"
    shot(page, "login-error")


def test_ago_times_keep_counting_on_an_open_page(page, live):
    page.clock.install()
    page.goto(f"{live.url}/sessions/{session_id(live, 'alpha')}/")
    created = page.locator("#session-link dd time.ago").first
    expect(created).to_have_text(re.compile(r"^\d+s ago\s*$"))
    page.clock.fast_forward("02:00")
    expect(created).to_have_text(re.compile(r"^2m ago\s*$"))
    page.clock.fast_forward("03:00:00")
    expect(created).to_have_text(re.compile(r"^3h ago\s*$"))


def test_a_comment_typed_while_the_server_is_down_stays_in_the_composer(browser, tmp_path):
    live = start_board(tmp_path)
    context = browser.new_context(viewport=LAPTOP)
    try:
        live.start_session("hook-gamma", "gamma", cwd="/work/gamma")
        page = context.new_page()
        log_in(page, live)
        open_live(page, f"{live.url}/sessions/{session_id(live, 'gamma')}/")
        dot = page.locator(".live-dot")
        expect(dot).to_have_attribute("title", "Live: this page updates itself as sessions and messages change.")
        text = "Owner here: hold the release until the migration is reviewed."
        page.fill("#composer textarea", text)

        stop_board(live)
        expect(page.locator("html")).to_have_attribute("data-live", "off", timeout=LIVE_TIMEOUT)
        expect(dot).to_have_attribute("title", re.compile(r"^Not connected to relaybay since .*: this page is not updating"))
        page.click("#composer button")
        status = page.locator("#composer .composer-status.error")
        expect(status).to_contain_text("Not sent: relaybay did not answer. Your text is kept here")
        expect(page.locator("#composer textarea")).to_have_value(text)
        shot(page, "composer-server-down")
    finally:
        context.close()
        stop_board(live)


def test_a_draft_comes_back_after_leaving_the_page_until_it_is_sent(page, live):
    session_page = f"{live.url}/sessions/{session_id(live, 'beta')}/"
    page.goto(session_page)
    page.fill("#composer textarea", "A draft for beta")
    page.goto(f"{live.url}/messages/")
    page.goto(session_page)
    expect(page.locator("#composer textarea")).to_have_value("A draft for beta")
    page.click("#composer button")
    expect(page.locator("#composer .composer-status")).to_contain_text("Comment saved for beta")
    page.goto(session_page)
    expect(page.locator("#composer textarea")).to_have_value("")


def test_the_owner_comments_to_a_messages_sender_from_its_row(page, live):
    status, answer = live.post("/message_send", {"body": "Is the schema final?", "to": "beta", "session": "alpha", "hook_session": "hook-alpha"})
    assert status == 200, answer
    open_live(page, f"{live.url}/messages/")
    row = page.locator(f"#message-{answer['id']}")
    row.get_by_text("Comment to its sender or recipient").click()
    row.locator("textarea").fill("alpha: the schema is final, go ahead.")
    row.get_by_role("button", name="Comment to alpha").click()
    expect(row.locator(".composer-status")).to_contain_text("Comment saved for alpha")
    shot(page, "message-row-comment")

    hook_answer = live.hook("UserPromptSubmit", "hook-alpha", prompt="next", cwd="/work/alpha")
    assert "alpha: the schema is final, go ahead." in hook_answer["hookSpecificOutput"]["additionalContext"]


def test_the_map_fills_the_page_with_readable_labels_and_arrowheads(page, live):
    for sender, to, hook in [("alpha", "beta", "hook-alpha"), ("beta", "alpha", "hook-beta"), ("alpha", "beta", "hook-alpha")]:
        status, answer = live.post("/message_send", {"body": "map", "to": to, "session": sender, "hook_session": hook})
        assert status == 200, answer
    page.goto(f"{live.url}/map/")
    main = box(page.locator("main"))
    svg = box(page.locator("#map-svg svg"))
    assert svg["width"] >= main["width"] - 2 * 22 - 2, "the drawing spans the page"
    assert svg["height"] >= 0.75 * (LAPTOP["height"] - svg["y"]), "and most of its height"
    label = page.locator("#map-svg .node text", has_text="alpha")
    assert box(label)["height"] >= 12, "labels read at laptop size"
    arrowhead_px = page.evaluate(
        """() => {
            const svg = document.querySelector('#map-svg svg');
            const marker = svg.querySelector('marker#arrow');
            return marker.markerWidth.baseVal.value * svg.getScreenCTM().a;
        }"""
    )
    assert arrowhead_px >= 10, "arrowheads show which way the messages went"
    assert page.locator("#map-svg path.edge[marker-end]").count() == 2, "one edge per direction"
    shot(page, "map")
