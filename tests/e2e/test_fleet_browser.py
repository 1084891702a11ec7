"""The owner decides about held messages in a real browser (docs/rules.md §4.8): Chromium on the
Inbox of a relaybay under daphne. A message to a session whose inbound policy is hold waits
there; Deliver sends it on to the session's next hook, Deny keeps it from ever arriving, and
the sender's sent box says which."""

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import shot, start_board, stop_board

expect = playwright.expect
LIVE_TIMEOUT = 5000


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = start_board(tmp_path_factory.mktemp("fleet-board"))
    server.start_session("hook-lead", "lead", cwd="/work/lead")
    server.start_session("hook-guarded", "guarded", cwd="/work/guarded")
    status, _ = server.post("/sessions/guarded/inbound", {"policy": "hold"}, token=server.owner_token)
    assert status == 200
    yield server
    stop_board(server)


def send(live, body):
    status, answer = live.post("/message_send", {"body": body, "to": "guarded", "session": "lead", "hook_session": "hook-lead"})
    assert status == 200, answer
    assert answer["state"] == "held"
    return answer["id"]


def sent_state(live, message_id):
    status, listed = live.get("/messages_list", session="lead", box="sent", limit=100, hook_session="hook-lead")
    return next(m["state"] for m in listed["messages"] if m["id"] == message_id)


def context_of(answer):
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def test_a_held_message_reaches_the_session_after_the_owner_clicks_deliver(page, live):
    message_id = send(live, "Please merge the release branch.")
    assert "Please merge the release branch." not in context_of(live.hook("UserPromptSubmit", "hook-guarded", prompt="go", cwd="/work/guarded"))
    page.goto(f"{live.url}/inbox/")
    item = page.locator(f"#inbox-{message_id}")
    expect(item).to_contain_text("held: its recipient holds messages from sessions for you")
    expect(item).to_contain_text("Please merge the release branch.")
    shot(page, "inbox-held")
    item.get_by_role("button", name="Deliver").click()
    expect(page.locator(f"#inbox-{message_id}")).to_have_count(0, timeout=LIVE_TIMEOUT)
    expect(page.locator("body")).to_contain_text(f"M-{message_id} delivered")
    assert sent_state(live, message_id) == "waiting"
    answer = live.hook("PreToolUse", "hook-guarded", tool_name="Bash", tool_input={"command": "ls"}, cwd="/work/guarded")
    assert "Please merge the release branch." in context_of(answer)
    assert sent_state(live, message_id) == "delivered"


def test_a_denied_message_never_reaches_the_session(page, live):
    message_id = send(live, "Drop the production table.")
    page.goto(f"{live.url}/inbox/")
    page.locator(f"#inbox-{message_id}").get_by_role("button", name="Deny").click()
    expect(page.locator(f"#inbox-{message_id}")).to_have_count(0, timeout=LIVE_TIMEOUT)
    assert sent_state(live, message_id) == "denied"
    answer = live.hook("PreToolUse", "hook-guarded", tool_name="Bash", tool_input={"command": "ls"}, cwd="/work/guarded")
    assert "Drop the production table." not in context_of(answer)
    page.goto(f"{live.url}/messages/")
    expect(page.locator(f"#message-{message_id} .mark-denied")).to_have_text("denied")
