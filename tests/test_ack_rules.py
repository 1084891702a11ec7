"""Reading and acknowledging (docs/rules.md §4.4): who may mark mail read, what the mark says, and a
reply marking its parent read under the same rule."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from messaging.models import SessionMessage
from sessions_app.models import Event

from .message_personas import context_of, counts, detail, link, rb  # noqa: F401

pytestmark = pytest.mark.django_db


def needs_link_id(name):
    return (
        f'"{name}" has an exact hook link: acknowledge with its hook_session '
        "(your CLAUDE_CODE_SESSION_ID), so its mail is not marked read in its name by someone else."
    )


@pytest.fixture
def alice(rb):
    return rb.live("alice", "hook-a")


def to_bob(rb, body="hi bob"):
    return rb.sent(body=body, to="bob", session="alice", hook_session="hook-a")["id"]


def read_mark(rb, message_id):
    """The read mark the sender sees on its message in messages_list ("" while unread)."""
    [message] = [m for m in rb.messages("alice", box="sent", limit=100) if m["id"] == message_id]
    return message["read"]


UNREAD, READ, READ_NOT_VERIFIED = "", "read", "read (name not verified)"


# A row with an exact link, live or ended, needs that link's hook id


def _live(rb):
    rb.live("bob", "hook-b")


def _ended(rb):
    rb.live("bob", "hook-b")
    rb.end("hook-b")


def _desktop_linked_then_ended(rb):
    rb.desktop("desk-b", "bob")
    rb.guessed("hook-b", cwd="/desk/desk-b")
    assert rb.session_link(hook_session="hook-b", session="bob").status_code == 200
    rb.end("hook-b")


EXACT_SETUPS = [_live, _ended, _desktop_linked_then_ended]


@pytest.mark.parametrize("setup", EXACT_SETUPS)
@pytest.mark.parametrize("hook_session", [None, "made-up", "hook-a", "hook-other"])
@pytest.mark.parametrize("by_id", [True, False])
def test_an_exactly_linked_row_s_mail_cannot_be_acknowledged_without_its_link_s_id(rb, alice, setup, hook_session, by_id):
    setup(rb)
    rb.unnamed("hook-other")
    message_id = to_bob(rb)
    before = counts()
    response = rb.ack(session="bob", hook_session=hook_session, **({"message_id": message_id} if by_id else {}))
    assert response.status_code == 403
    assert detail(response) == needs_link_id("bob")
    assert counts() == before
    assert read_mark(rb, message_id) == UNREAD


@pytest.mark.parametrize("setup", EXACT_SETUPS)
@pytest.mark.parametrize("names_itself", [True, False])
def test_an_exactly_linked_row_acknowledges_with_its_link_s_id_live_or_ended_and_the_mark_is_read(
    rb, alice, setup, names_itself
):
    setup(rb)
    message_id = to_bob(rb)
    bob = link("hook-b").session
    fields = {"session": "bob"} if names_itself else {}
    response = rb.ack(message_id=f"M-{message_id}", hook_session="hook-b", **fields)
    assert response.status_code == 200
    assert response.json() == {"session": bob.handle, "marked": 1, "mark": "read"}
    [listed] = rb.messages("bob")
    assert listed["read"] == "read"


def test_an_old_id_left_by_a_restart_does_not_prove_a_row_that_is_live_under_its_new_id(rb, alice):
    rb.live("bob", "hook-b1")
    rb.exited("hook-b1")
    rb.live("bob", "hook-b2")
    message_id = to_bob(rb)
    before = counts()
    response = rb.ack(message_id=message_id, session="bob", hook_session="hook-b1")
    assert response.status_code == 403
    assert detail(response) == needs_link_id("bob")
    assert counts() == before
    assert rb.ack(message_id=message_id, session="bob", hook_session="hook-b2").json()["mark"] == "read"


def test_once_every_link_has_ended_any_of_the_row_s_exact_ids_proves_it(rb, alice):
    rb.live("bob", "hook-b1")
    rb.exited("hook-b1")
    rb.live("bob", "hook-b2")
    rb.end("hook-b2")
    first, second = to_bob(rb, "one"), to_bob(rb, "two")
    assert rb.ack(message_id=first, session="bob", hook_session="hook-b1").json()["mark"] == "read"
    assert rb.ack(message_id=second, session="bob", hook_session="hook-b2").json()["mark"] == "read"


def test_another_session_s_hook_id_does_not_prove_it(rb, alice):
    rb.live("bob", "hook-b")
    message_id = to_bob(rb)
    before = counts()
    response = rb.ack(message_id=message_id, session="bob", hook_session="hook-a")
    assert response.status_code == 403
    assert counts() == before


# A row that never linked itself: acknowledged in its name, marked "read (name not verified)"


def _no_hooks(rb):
    rb.desktop("desk-b", "bob")


def _guessed(rb):
    rb.desktop("desk-b", "bob", folder="/work/bob")
    rb.guessed("hook-b", cwd="/work/bob")


def _mcp_row(rb):
    rb.sent(body="I exist", to="alice", session="bob")


@pytest.mark.parametrize("setup", [_no_hooks, _guessed, _mcp_row])
@pytest.mark.parametrize("hook_session", [None, "made-up"])
def test_a_row_that_never_linked_itself_acknowledges_in_its_name_as_read_name_not_verified(rb, alice, setup, hook_session):
    setup(rb)
    message_id = to_bob(rb)
    response = rb.ack(message_id=message_id, session="BOB", hook_session=hook_session)
    assert response.status_code == 200
    recipient = f"S-{SessionMessage.objects.get(pk=message_id).recipient_id}"
    assert response.json() == {"session": recipient, "marked": 1, "mark": "read (name not verified)"}
    [listed] = rb.messages("bob")
    assert listed["read"] == "read (name not verified)"
    [sent] = rb.messages("alice", box="sent")
    assert sent["read"] == "read (name not verified)"


@pytest.mark.parametrize("setup", [_no_hooks, _guessed])
@pytest.mark.parametrize("links_by", ["session_link", "RELAYBAY_SESSION"])
def test_a_message_acknowledged_unverified_is_not_delivered_when_the_row_links_after_all(rb, alice, setup, links_by):
    setup(rb)
    acked = to_bob(rb, "already read")
    pending = to_bob(rb, "still waiting")
    assert rb.ack(message_id=acked, session="bob").json()["mark"] == "read (name not verified)"
    if links_by == "session_link":
        # A terminal started where the one free desktop row is: only guessed until it links.
        rb.desktop("desk-n", "new terminal", folder="/work/new")
        rb.guessed("hook-new", cwd="/work/new")
        assert rb.session_link(hook_session="hook-new", session="bob").status_code == 200
    else:
        rb.live("bob", "hook-new")
    assert link("hook-new").exact
    text = context_of(rb.prompt("hook-new"))
    assert '"still waiting"' in text
    assert "already read" not in text
    assert SessionMessage.objects.get(pk=acked).delivered_at is None
    assert SessionMessage.objects.get(pk=pending).delivered_at is not None


# Without an id


def test_an_ack_without_an_id_marks_only_the_delivered_unread_mail_of_an_exact_row(rb, alice):
    rb.live("bob", "hook-b")
    delivered = [to_bob(rb, "one"), to_bob(rb, "two")]
    rb.prompt("hook-b")
    waiting = to_bob(rb, "three")
    response = rb.ack(session="bob", hook_session="hook-b")
    assert response.json()["marked"] == 2
    assert [read_mark(rb, m) for m in delivered] == [READ, READ]
    # Not delivered yet: marking it read would keep it from ever reaching the model.
    assert read_mark(rb, waiting) == UNREAD
    assert rb.ack(session="bob", hook_session="hook-b").json()["marked"] == 0


def test_an_ack_without_an_id_marks_all_unread_mail_of_a_row_that_never_linked(rb, alice):
    rb.desktop("desk-b", "bob")
    ids = [to_bob(rb, "one"), to_bob(rb, "two")]
    # Nothing is ever delivered to it, so "delivered-unread" would never match; its mail is
    # read through messages_list, and the ack marks what it listed.
    response = rb.ack(session="bob")
    assert response.json()["marked"] == 2
    assert [read_mark(rb, m) for m in ids] == [READ_NOT_VERIFIED, READ_NOT_VERIFIED]


def test_an_ack_marks_any_number_of_messages_with_the_same_statements(rb, alice, settings):
    """One UPDATE marks them all and one INSERT writes their feed rows: acknowledging twelve
    messages takes as many statements as acknowledging one, and leaves the same marks and
    message.read rows as marking them one by one did."""
    settings.RELAYBAY_SENDS_PER_MINUTE = 100
    bob = rb.desktop("desk-b", "bob")

    def ack_all(count):
        ids = [to_bob(rb, f"note {count}.{n}") for n in range(count)]
        with CaptureQueriesContext(connection) as queries:
            assert rb.ack(session="bob").json()["marked"] == count
        return ids, [q["sql"] for q in queries.captured_queries]

    _, one = ack_all(1)
    ids, twelve = ack_all(12)
    assert len(twelve) == len(one)
    assert sum(sql.startswith('UPDATE "session_message"') for sql in twelve) == 1
    assert sum(sql.startswith('INSERT INTO "sessions_app_event"') for sql in twelve) == 1
    assert [read_mark(rb, m) for m in ids] == [READ_NOT_VERIFIED] * 12
    feed = Event.objects.filter(name="message.read", data__message__in=ids)
    assert sorted((e.session_id, e.data["message"], e.data["from"], e.data["to"], e.data["verified"]) for e in feed) == [
        (bob.pk, m, "alice", "bob", False) for m in sorted(ids)
    ]
    # Read already: nothing is marked again and no feed row is written.
    with CaptureQueriesContext(connection) as queries:
        assert rb.ack(message_id=ids[0], session="bob").json()["marked"] == 0
    assert not any(q["sql"].startswith(("UPDATE", "INSERT")) for q in queries.captured_queries)


def test_an_ack_by_hook_id_alone_names_the_row_of_that_link(rb, alice):
    bob = rb.live("bob", "hook-b")
    message_id = to_bob(rb)
    rb.prompt("hook-b")
    assert rb.ack(hook_session="hook-b").json() == {"session": bob.handle, "marked": 1, "mark": "read"}
    assert read_mark(rb, message_id) == READ


# Ack creates no row, and only marks one's own mail


@pytest.mark.parametrize(
    "fields, status, sentence",
    [
        ({"session": "nobody"}, 404, 'No session goes by "nobody". Use sessions_list to see the names you can use.'),
        ({"session": "nobody", "hook_session": "made-up"}, 404, None),
        ({}, 400, "Say whose mail is read: pass session (your name) and hook_session."),
        ({"hook_session": "made-up"}, 400, "Say whose mail is read: pass session (your name) and hook_session."),
        ({"session": "carol", "message_id": "{mid}"}, 403, "M-{mid} is not addressed to {carol}; you can only acknowledge your own mail."),
        ({"session": "carol", "message_id": 999}, 404, "There is no message M-999. messages_list shows your messages and their ids."),
        ({"session": "carol", "message_id": "twelve"}, 400, '"twelve" is not a message id; give the number, like 12 or M-12.'),
    ],
)
def test_a_refused_ack_writes_nothing(rb, alice, fields, status, sentence):
    rb.desktop("desk-b", "bob")
    carol = rb.desktop("desk-c", "carol")
    message_id = to_bob(rb)
    fields = {k: (v.format(mid=message_id) if isinstance(v, str) else v) for k, v in fields.items()}
    before = counts()
    response = rb.ack(**fields)
    assert response.status_code == status, response.content
    if sentence is not None:
        assert detail(response) == sentence.format(mid=message_id, carol=carol.handle)
    assert counts() == before
    assert read_mark(rb, message_id) == UNREAD


def test_an_ack_creates_no_row_for_an_unknown_name(rb, alice):
    before = counts()
    rb.ack(session="stranger", hook_session="hook-a")
    assert counts() == before


def test_acknowledging_twice_marks_once(rb, alice):
    rb.desktop("desk-b", "bob")
    message_id = to_bob(rb)
    assert rb.ack(message_id=message_id, session="bob").json()["marked"] == 1
    assert rb.ack(message_id=message_id, session="bob").json()["marked"] == 0


# A reply marks its parent read under the same rule


def test_a_verified_reply_marks_its_parent_read(rb, alice):
    rb.live("bob", "hook-b")
    parent = to_bob(rb)
    rb.sent(body="got it", in_reply_to=parent, session="bob", hook_session="hook-b")
    assert read_mark(rb, parent) == READ


def test_a_reply_from_a_row_that_never_linked_marks_its_parent_read_name_not_verified(rb, alice):
    rb.desktop("desk-b", "bob")
    parent = to_bob(rb)
    reply = rb.sent(body="got it", in_reply_to=f"M-{parent}", session="bob")
    assert reply["to_handle"] == link("hook-a").session.handle
    assert read_mark(rb, parent) == READ_NOT_VERIFIED


def test_a_reply_from_an_ended_exact_row_without_its_id_is_sent_but_leaves_its_parent_unread(rb, alice):
    rb.live("bob", "hook-b")
    parent = to_bob(rb)
    rb.end("hook-b")
    # An ended row's name proves nothing, so the reply goes out unverified (docs/rules.md §4.2)...
    reply = rb.sent(body="got it", in_reply_to=parent, session="bob")
    assert reply["sender_verified"] is False
    # ...but without the link's id it cannot mark bob's mail read, or the parent would never
    # be delivered when bob comes back.
    assert read_mark(rb, parent) == UNREAD


def test_a_reply_from_an_ended_exact_row_with_its_id_marks_its_parent_read(rb, alice):
    rb.live("bob", "hook-b")
    parent = to_bob(rb)
    rb.end("hook-b")
    reply = rb.sent(body="got it", in_reply_to=parent, session="bob", hook_session="hook-b")
    assert reply["sender_verified"] is False
    assert read_mark(rb, parent) == READ


def test_a_reply_by_a_third_session_does_not_mark_the_parent_read(rb, alice):
    rb.live("bob", "hook-b")
    rb.live("carol", "hook-c")
    parent = to_bob(rb)
    rb.sent(body="me too", in_reply_to=parent, session="carol", hook_session="hook-c")
    assert read_mark(rb, parent) == UNREAD
