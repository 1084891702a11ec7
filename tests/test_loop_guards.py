"""Loop guards (docs/rules.md §4.6): 10 sends per proven process per rolling minute, one budget for
every unproven sender; replies at most 8 deep with the refused reply's parent going to the owner's
Inbox. (No self-sends: test_recipient_rules; Stop blocks: test_message_delivery.)"""

import itertools

import pytest

from messaging.actions import do_mark_inbox_seen
from messaging.models import SessionMessage
from sessions_app.models import Event, Session

from .message_personas import clock, counts, detail, rb  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(rb):
    rb.live("alice", "hook-a")
    rb.live("bob", "hook-b")


BODIES = itertools.count()


def from_alice(rb, **fields):
    # A new body each time: the same body again within 30 s is a duplicate, not a send.
    return rb.send(**{"body": f"ping {next(BODIES)}", "to": "bob", "session": "alice", "hook_session": "hook-a", **fields})


def rate_limited(wait):
    return f"You sent 10 messages or broadcasts in the last minute, the limit. Nothing was sent. Wait {wait} s before sending again."


def test_the_eleventh_send_in_a_minute_is_refused_with_the_time_to_wait_and_the_window_rolls(rb, pair, clock):
    for second in range(10):
        clock.at(second)
        assert from_alice(rb).status_code == 200
    clock.at(10)
    before = counts()
    response = from_alice(rb)
    assert response.status_code == 429
    assert detail(response) == rate_limited(50)
    assert counts() == before
    clock.at(59.5)
    assert detail(from_alice(rb)) == rate_limited(1)
    # The send at second 0 leaves the window; the refused attempts never entered it.
    clock.at(60)
    assert from_alice(rb).status_code == 200
    clock.at(60.5)
    assert detail(from_alice(rb)) == rate_limited(1)
    clock.at(61)
    assert from_alice(rb).status_code == 200
    assert SessionMessage.objects.count() == 12


def test_refused_sends_do_not_count(rb, pair, clock):
    rb.live("carol", "hook-c")
    for _ in range(9):
        assert from_alice(rb).status_code == 200
    refusals = [
        from_alice(rb, to="nobody"),
        from_alice(rb, to="alice"),
        from_alice(rb, body='"' * 4000),
        from_alice(rb, body=""),
        from_alice(rb, to="carol\nx"),
        from_alice(rb, hook_session=None),
    ]
    assert [r.status_code for r in refusals] == [404, 403, 400, 400, 400, 403]
    assert from_alice(rb).status_code == 200
    assert from_alice(rb).status_code == 429


def test_the_limit_is_per_proven_process_whatever_name_it_writes_under(rb, pair, clock):
    alice = rb.live("alice", "hook-a")
    rb.give_aliases(alice, ["al"])
    names = ["alice", "al", "ALICE", alice.handle, "hook-a"] * 2
    for name in names:
        assert from_alice(rb, session=name).status_code == 200
    assert from_alice(rb, session="al").status_code == 429
    assert rb.send(body="pong", to="alice", session="bob", hook_session="hook-b").status_code == 200


UNPROVEN_RATE_LIMITED = (
    "Senders whose name no live hook link proves share one budget, and together they sent 10 messages or "
    "broadcasts in the last minute, the limit. Nothing was sent. Wait 60 s before sending again."
)


def test_unproven_senders_share_one_budget_whatever_names_they_take(rb, pair, clock):
    # Thirty names, one budget: a name taken for each send buys no new one, and a refused send makes no row.
    answers = [rb.send(body=f"hi {next(BODIES)}", to="bob", session=f"spam-{n}") for n in range(30)]
    assert [r.status_code for r in answers] == [200] * 10 + [429] * 20
    assert {r.json()["code"] for r in answers[10:]} == {"rate_limited"}
    assert detail(answers[10]) == UNPROVEN_RATE_LIMITED
    assert Session.objects.filter(title__startswith="spam-").count() == 10
    # A desktop row's name proves nothing either: the same budget.
    rb.desktop("desk-c", "carol")
    assert detail(rb.send(body="hi", to="bob", session="carol")) == UNPROVEN_RATE_LIMITED
    # A proven session keeps its own.
    assert from_alice(rb).status_code == 200


# Reply depth


def reply_chain(rb, depth):
    """alice and bob answering each other: the ids of messages of depth 0..depth."""
    ids = [from_alice(rb).json()["id"]]
    writers = [("bob", "hook-b"), ("alice", "hook-a")]
    for d in range(1, depth + 1):
        name, hook_session = writers[(d - 1) % 2]
        answer = rb.sent(body=f"reply {d}", in_reply_to=ids[-1], session=name, hook_session=hook_session)
        ids.append(answer["id"])
    return ids


def inbox_state(message_id):
    message = SessionMessage.objects.get(pk=message_id)
    return message.needs_owner, message.owner_seen_at


def test_replies_up_to_8_deep_are_accepted(rb, pair):
    ids = reply_chain(rb, 8)
    assert list(SessionMessage.objects.order_by("id").values_list("depth", flat=True)) == list(range(9))
    assert [SessionMessage.objects.get(pk=i).parent_id for i in ids[1:]] == ids[:-1]
    assert not SessionMessage.objects.filter(needs_owner=True).exists()


@pytest.mark.parametrize("to", [None, "alice", "carol"])
def test_a_ninth_deep_reply_is_refused_and_its_parent_goes_to_the_owner_s_inbox(rb, pair, to):
    rb.desktop("desk-c", "carol")
    ids = reply_chain(rb, 8)
    deepest = ids[-1]
    before = counts()
    events = set(Event.objects.values_list("pk", flat=True))
    response = rb.send(body="reply 9", in_reply_to=deepest, to=to, session="bob", hook_session="hook-b")
    assert response.status_code == 403
    assert detail(response) == (
        f"This reply would be 9 deep; replies stop at 8. "
        f"M-{deepest} went to the owner's Inbox instead: leave the decision to the owner."
    )
    assert counts() == {**before, "Event": before["Event"] + 1}
    [event] = Event.objects.exclude(pk__in=events)
    assert event.name == "message.depth_refused"
    assert inbox_state(deepest) == (True, None)
    # The refused reply marks nothing read either.
    assert SessionMessage.objects.get(pk=deepest).read_at is None
    assert [inbox_state(i)[0] for i in ids[:-1]] == [False] * 8


def test_the_parent_stays_in_the_inbox_until_the_owner_marks_it_seen_and_returns_on_the_next_refusal(rb, pair):
    deepest = reply_chain(rb, 8)[-1]
    rb.send(body="reply 9", in_reply_to=deepest, session="bob", hook_session="hook-b")
    seen = do_mark_inbox_seen(message=SessionMessage.objects.get(pk=deepest))
    assert seen.needs_owner and seen.owner_seen_at is not None
    rb.send(body="reply 9 again", in_reply_to=deepest, session="bob", hook_session="hook-b")
    assert inbox_state(deepest) == (True, None)


def test_a_too_deep_reply_whose_sender_is_refused_puts_nothing_in_the_inbox(rb, pair):
    deepest = reply_chain(rb, 8)[-1]
    # Passing for another row with a live session's hook id is refused first, and a refused
    # write changes no row.
    rb.desktop("desk-m", "mallory")
    before = counts()
    response = rb.send(body="reply 9", in_reply_to=deepest, session="mallory", hook_session="hook-b")
    assert response.status_code == 403
    assert "goes by \"bob\", not by \"mallory\"" in detail(response)
    assert counts() == before
    assert inbox_state(deepest) == (False, None)


def test_a_too_deep_reply_from_a_new_name_creates_no_row(rb, pair):
    deepest = reply_chain(rb, 8)[-1]
    before = counts()
    response = rb.send(body="reply 9", in_reply_to=deepest, to="alice", session="newcomer")
    assert response.status_code == 403
    assert counts() == {**before, "Event": before["Event"] + 1}
    assert inbox_state(deepest) == (True, None)
