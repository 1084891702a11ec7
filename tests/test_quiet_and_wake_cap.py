"""Quiet (docs/rules.md §4.8): a per-session choice on its page (all / hide agent messages / agent messages
only), remembered, deleting nothing. The wake-up cap: at most RELAYBAY_WAKE_CAP (3) wake-ups
caused by messages between two owner actions (a prompt or a comment); past it messages wait for
the next prompt and the board says why."""

import pytest

from messaging.models import SessionMessage
from relaybay_hook.codex_wake import NUDGE
from sessions_app.hooks import delivery
from sessions_app.models import HookLink, Session

from .board_fixtures import owner  # noqa: F401
from .message_personas import clock, context_of, counts, quoted, rb  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(rb):
    rb.live("alice", "hook-a")
    bob = rb.live("bob", "hook-b")
    rb.prompt("hook-b")
    rb.stop("hook-b")  # idle after a turn, as the wake-up hook finds it
    return bob


def send(rb, body):
    return rb.sent(body=body, to="bob", session="alice", hook_session="hook-a")


WAITERS = iter(range(10**6))


def wake(rb):
    """The wake-up hook's one step: a waiter registers, and claims what may wake the session.
    Returns the wake text or None; a woken session goes idle again at its Stop."""
    waiter = f"w{next(WAITERS)}"
    assert delivery.do_register_waiter("hook-b", waiter)
    woken = delivery.do_claim_for_waiter("hook-b", waiter)
    if woken:
        assert rb.stop("hook-b") == {}
    return woken.text() if woken else None


def wakes(pair):
    return HookLink.objects.get(hook_session="hook-b").agent_wakes


# Wake-up cap


def test_messages_wake_an_idle_session_three_times_then_wait_for_the_next_prompt(rb, pair):
    for i in range(3):
        send(rb, f"wake {i}")
        assert quoted(f"wake {i}") in wake(rb)
    assert wakes(pair) == 3
    fourth = send(rb, "wake 3")
    assert wake(rb) is None
    assert fourth["status"] == (
        "Not delivered yet: messages from sessions woke it as often as the wake-up cap allows since the owner's "
        "last prompt or comment: this waits for its next prompt."
    )
    assert SessionMessage.objects.get(pk=fourth["id"]).delivered_at is None
    [listed] = rb.messages("alice", box="sent", limit=1)
    assert "the wake-up cap allows since the owner's last prompt or comment: this waits for its next prompt" in listed["status"]
    # The owner's prompt delivers it and lifts the cap.
    assert quoted("wake 3") in context_of(rb.prompt("hook-b"))
    assert wakes(pair) == 0


def test_the_prompt_an_interactive_wake_up_starts_with_is_not_the_owners(rb, pair):
    # Claude Code starts a woken interactive turn with a UserPromptSubmit of its own notice
    # (seen in tests/e2e/test_claude_wakeup.py): it must not lift the cap as a typed prompt does.
    HookLink.objects.filter(hook_session="hook-b").update(agent_wakes=3)
    rb.hook("UserPromptSubmit", "hook-b", prompt="<task-notification>\n<summary>Stop hook</summary>")
    assert wakes(pair) == 3
    rb.hook("UserPromptSubmit", "hook-b", prompt="carry on")
    assert wakes(pair) == 0


def test_an_owner_comment_still_wakes_a_capped_session_and_lifts_the_cap(rb, pair):
    for i in range(3):
        send(rb, f"wake {i}")
        wake(rb)
    send(rb, "waits")
    comment = rb.comment(pair, "owner here")
    text = wake(rb)
    assert f"Comment C-{comment.pk} from the owner" in text
    # The comment lifted the cap, so the waiting message rides along, and the wake is the owner's.
    assert quoted("waits") in text
    assert wakes(pair) == 0


def test_the_cap_is_a_setting(rb, pair, settings):
    settings.RELAYBAY_WAKE_CAP = 1
    send(rb, "one")
    assert wake(rb)
    send(rb, "two")
    assert wake(rb) is None


def test_a_busy_session_still_gets_messages_at_its_tool_calls_past_the_cap(rb, pair):
    HookLink.objects.filter(hook_session="hook-b").update(agent_wakes=3)
    send(rb, "during work")
    assert quoted("during work") in context_of(rb.tool("hook-b"))


def test_the_board_says_why_a_capped_session_waits(rb, pair, client, owner):
    HookLink.objects.filter(hook_session="hook-b").update(agent_wakes=3)
    message = send(rb, "waiting")
    client.force_login(owner)
    page = client.get(f"/sessions/{pair.pk}/").content.decode()
    assert 'id="wake-cap"' in page and "this waits for its next prompt." in page
    row = client.get("/messages/").content.decode()
    row = row[row.index(f'id="message-{message["id"]}"') :]
    assert "as often as the wake-up cap allows" in row[: row.index('<div class="body">')]


# Quiet


@pytest.fixture
def busy_page(rb, pair, owner, client):
    send(rb, "agent text here")
    rb.comment(pair, "owner text here")
    client.force_login(owner)
    return lambda: client.get(f"/sessions/{pair.pk}/").content.decode()


@pytest.mark.parametrize(
    "choice, shows_messages, shows_comments",
    [("all", True, True), ("hide_agents", False, True), ("agents_only", True, False)],
)
def test_the_choice_shows_or_hides_on_the_page_and_is_remembered(rb, pair, client, busy_page, choice, shows_messages, shows_comments):
    client.post(f"/sessions/{pair.pk}/quiet/", {"quiet": choice})
    assert Session.objects.get(pk=pair.pk).quiet == choice
    page = busy_page()
    assert ("agent text here" in page) is shows_messages
    assert ("owner text here" in page) is shows_comments
    assert ('id="agent-messages-hidden"' in page) is (not shows_messages)
    assert f'<option value="{choice}" selected>' in page


def test_quiet_deletes_nothing_and_leaves_search_and_export_alone(rb, pair, client, busy_page, clock):
    before = counts()
    export_before = client.get(f"/sessions/{pair.pk}/export.md").content
    search_before = client.get("/search/?q=owner+text").content.decode().count("owner text")
    for choice in ("hide_agents", "agents_only"):
        client.post(f"/sessions/{pair.pk}/quiet/", {"quiet": choice})
        assert counts() == before
        assert client.get(f"/sessions/{pair.pk}/export.md").content == export_before
        assert client.get("/search/?q=owner+text").content.decode().count("owner text") == search_before


def test_an_unknown_choice_is_refused(rb, pair, client, busy_page):
    client.post(f"/sessions/{pair.pk}/quiet/", {"quiet": "silence"})
    assert Session.objects.get(pk=pair.pk).quiet == "all"


def test_a_codex_waiter_is_told_mail_waits_and_the_turn_it_starts_delivers_it(rb, pair):
    # Codex's waiter wakes its session with a fixed prompt (relaybay_hook/codex_wake.py): it is
    # told only that mail waits; the mail stays pending for the woken turn's UserPromptSubmit,
    # whose prompt is not the owner's (the cap holds).
    sent = send(rb, "wake by nudge")
    assert delivery.do_register_waiter("hook-b", "nudged")
    assert delivery.do_claim_for_waiter("hook-b", "nudged", nudge=True) == delivery.WAKE_PENDING
    assert SessionMessage.objects.get(pk=sent["id"]).delivered_at is None
    link = HookLink.objects.get(hook_session="hook-b")
    assert (link.state, link.waiter, link.agent_wakes) == (HookLink.State.BUSY, "", 1)
    assert quoted("wake by nudge") in context_of(rb.prompt("hook-b", prompt=NUDGE))
    assert wakes(pair) == 1
    rb.stop("hook-b")
    assert delivery.do_register_waiter("hook-b", "again")
    assert delivery.do_claim_for_waiter("hook-b", "again", nudge=True) is None  # nothing waits
