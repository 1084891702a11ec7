"""The unread cap (docs/rules.md §4.8): at most RELAYBAY_UNREAD_CAP (50) undelivered messages from
sessions wait for one recipient; the next send is refused with why and what to do; comments,
delivered, read, denied and expired messages do not count."""

import pytest

from messaging.actions import do_decide_held_message
from messaging.models import SessionMessage
from sessions_app.models import Session

from .message_personas import clock, counts, detail, rb  # noqa: F401

pytestmark = pytest.mark.django_db

CAP = 4


@pytest.fixture(autouse=True)
def small_cap(settings):
    settings.RELAYBAY_UNREAD_CAP = CAP
    settings.RELAYBAY_SENDS_PER_MINUTE = 100


@pytest.fixture
def bob(rb):
    rb.live("alice", "hook-a")
    rb.live("carol", "hook-c")
    return rb.live("bob", "hook-b")


def send(rb, body, sender="alice"):
    return rb.send(body=body, to="bob", session=sender, hook_session=f"hook-{sender[0]}")


def fill(rb, n, sender="alice"):
    for i in range(n):
        assert send(rb, f"{sender} {i}", sender).status_code == 200


def refused_for_cap(response):
    bob = Session.objects.get(title="bob")
    return response.status_code == 429 and response.json()["code"] == "unread_cap" and detail(response) == (
        f'"bob" ({bob.handle}) already has {CAP} messages from sessions waiting undelivered, the limit. Nothing was sent. '
        "Wait until it has taken some in (messages_list box=sent shows when yours are delivered), "
        "then send one message that says it all."
    )


def test_the_send_past_the_cap_is_refused_with_why_and_writes_nothing(rb, bob):
    fill(rb, 2)
    fill(rb, 2, "carol")  # the cap is the recipient's, whoever writes
    before = counts()
    assert refused_for_cap(send(rb, "one more"))
    assert refused_for_cap(send(rb, "one more", "carol"))
    assert counts() == before


@pytest.mark.parametrize(
    "make_room",
    ["delivered", "read", "denied", "expired"],
)
def test_messages_that_no_longer_wait_free_a_place(rb, bob, clock, settings, make_room):
    settings.RELAYBAY_HOLD_HOURS = 1
    if make_room in ("denied", "expired"):
        rb.inbound("bob", "hold")
    fill(rb, CAP)
    assert refused_for_cap(send(rb, "full"))
    first = SessionMessage.objects.filter(recipient=bob).order_by("id").first()
    if make_room == "delivered":
        rb.prompt("hook-b")  # takes them all in
    elif make_room == "read":
        assert rb.ack(message_id=first.pk, session="bob", hook_session="hook-b").json()["marked"] == 1
    elif make_room == "denied":
        do_decide_held_message(message=first, deliver=False)
    else:
        clock.at(3600)
    assert send(rb, "room now").status_code == 200


def test_comments_do_not_count(rb, bob):
    for i in range(CAP + 2):
        rb.comment(bob, f"owner note {i}")
    fill(rb, CAP)
    assert refused_for_cap(send(rb, "over"))


def test_held_messages_count_until_decided(rb, bob):
    rb.inbound("bob", "hold")
    fill(rb, CAP)
    assert refused_for_cap(send(rb, "over"))


def test_a_broadcast_refuses_only_the_full_recipient(rb, bob):
    from sessions_app.actions import do_save_task, do_update_session
    from sessions_app.models import Session

    task = do_save_task(title="t")
    for row in Session.objects.all():
        do_update_session(session=row, task=task)
    fill(rb, CAP)
    answer = rb.api.post("/message_broadcast", {"body": "all", "session": "alice", "hook_session": "hook-a"}).json()
    outcomes = {e["to"]: (e["outcome"], e["why"]) for e in answer["recipients"]}
    assert outcomes["carol"][0] == "not delivered yet"
    assert outcomes["bob"][0] == "refused" and "already has 4 messages from sessions waiting" in outcomes["bob"][1]
    assert SessionMessage.objects.filter(recipient=bob).count() == CAP
