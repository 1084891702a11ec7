"""Dedupe and idempotency (docs/rules.md §4.8): the same body from the same sender to the same recipient
within the window writes no second row and names the first; a request_id repeated by the same
sender within 24 h returns the first answer and writes nothing. Clocks controlled."""

import pytest

from messaging.models import Dispatch, SessionMessage

from .message_personas import clock, counts, detail, rb  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def trio(rb):
    rb.live("alice", "hook-a")
    rb.live("bob", "hook-b", busy=True)
    rb.live("carol", "hook-c", busy=True)


def send(rb, sender="alice", **fields):
    hooks = {"alice": "hook-a", "bob": "hook-b", "carol": "hook-c"}
    return rb.send(**{"body": "same words", "to": "bob", "session": sender, "hook_session": hooks[sender], **fields})


# Dedupe: one row per (sender, recipient, body) within the window


@pytest.mark.parametrize(
    "second, fields, sender, duplicate",
    [
        (29, {}, "alice", True),  # same body, sender and recipient inside 30 s
        (30, {}, "alice", False),  # the window is over
        (5, {"body": "other words"}, "alice", False),  # another body
        (5, {"to": "carol"}, "alice", False),  # another recipient
        (5, {"to": "alice"}, "carol", False),  # another sender
        (5, {"body": "same words "}, "alice", False),  # a body differs by a character
    ],
)
def test_the_same_body_to_the_same_recipient_within_the_window_writes_no_second_row(rb, trio, clock, second, fields, sender, duplicate):
    first = send(rb).json()
    clock.at(second)
    before = counts()
    response = send(rb, sender=sender, **fields)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["duplicate"] is duplicate
    if duplicate:
        assert counts() == before
        assert answer["id"] == first["id"] and answer["handle"] == first["handle"]
        assert answer["status"].startswith(f"Not sent again: the same text went to bob as {first['handle']} 29 s ago")
    else:
        assert counts()["SessionMessage"] == before["SessionMessage"] + 1
        assert answer["id"] != first["id"]


@pytest.mark.parametrize("recipient", ["alice", "carol"])  # idle, busy
def test_a_duplicate_says_when_the_first_arrives_in_the_first_answers_words(rb, trio, clock, recipient):
    first = send(rb, sender="bob", to=recipient).json()
    clock.at(5)
    again = send(rb, sender="bob", to=recipient).json()
    assert again["duplicate"] is True
    when = first["status"].removeprefix("Not delivered yet: ")
    assert when != first["status"] and when in {"it is idle and no wake-up hook of it is waiting: it sees this at its next prompt.", "it reaches it at its next tool call or prompt."}
    assert again["status"].endswith(f"{first['handle']} is not delivered yet: {when}")


def test_a_duplicate_uses_no_rate_slot(rb, trio, clock, settings):
    settings.RELAYBAY_SENDS_PER_MINUTE = 2
    send(rb)
    for _ in range(5):
        assert send(rb).json()["duplicate"] is True
    assert send(rb, body="second real send").status_code == 200
    assert send(rb, body="third real send").status_code == 429


def test_the_dedupe_window_is_a_setting(rb, trio, clock, settings):
    settings.RELAYBAY_DEDUPE_SECONDS = 5
    send(rb)
    clock.at(5)
    assert send(rb).json()["duplicate"] is False


# request_id: a repeat returns the first answer and writes nothing


def test_a_repeated_request_id_returns_the_first_answer_and_writes_nothing(rb, trio, clock):
    first = send(rb, request_id="req-1").json()
    assert first["request_id"] == "req-1" and first["repeat"] is False
    assert "call it again with the same request_id" in first["retry"]
    clock.at(3600)
    before = counts()
    # Even with another body and recipient: the id names the call, whatever it carries.
    repeat = send(rb, request_id="req-1", body="changed my mind", to="carol").json()
    assert counts() == before
    assert repeat == {**first, "repeat": True}


def test_a_request_id_is_free_again_after_24_hours(rb, trio, clock):
    first = send(rb, request_id="req-1").json()
    clock.at(24 * 3600)
    again = send(rb, request_id="req-1", body="a day later").json()
    assert again["repeat"] is False and again["id"] != first["id"]
    clock.at(24 * 3600 + 1)
    assert send(rb, request_id="req-1", body="x").json() == {**again, "repeat": True}


def test_request_ids_are_per_sender(rb, trio):
    mine = send(rb, request_id="shared-id").json()
    theirs = send(rb, sender="carol", request_id="shared-id", body="carol writes").json()
    assert theirs["repeat"] is False and theirs["id"] != mine["id"]


def test_a_repeat_of_a_refused_call_is_judged_again(rb, trio):
    # A refused call stored no answer: its retry is a new call.
    rb.inbound("bob", "refuse")
    assert send(rb, request_id="req-r").status_code == 403
    rb.inbound("bob", "accept")
    answer = send(rb, request_id="req-r").json()
    assert answer["repeat"] is False and SessionMessage.objects.filter(pk=answer["id"]).exists()


def test_a_broadcast_request_id_covers_the_whole_fan_out(rb, trio, clock):
    from sessions_app.actions import do_save_task, do_update_session
    from sessions_app.models import Session

    task = do_save_task(title="t")
    for row in Session.objects.all():
        do_update_session(session=row, task=task)
    call = {"body": "all hands", "session": "alice", "hook_session": "hook-a", "request_id": "b-1"}
    first = rb.api.post("/message_broadcast", call).json()
    assert len(first["recipients"]) == 2
    clock.at(120)
    before = counts()
    repeat = rb.api.post("/message_broadcast", {**call, "body": "other"}).json()
    assert counts() == before
    assert repeat == {**first, "repeat": True}


def test_a_request_id_of_the_wrong_shape_is_refused(rb, trio):
    before = counts()
    response = send(rb, request_id="x" * 201)
    assert response.status_code == 400
    assert "request_id must be one line of at most 200 characters" in detail(response)
    assert counts() == before


def test_a_request_id_is_kept_once_per_sender_by_the_database(rb, trio):
    # The constraint that holds when two processes race (tests/test_fleet_scale_out.py).
    from django.db import IntegrityError, transaction

    answer = send(rb, request_id="once").json()
    dispatch = Dispatch.objects.get(request_id="once")
    assert dispatch.answer == answer
    with pytest.raises(IntegrityError), transaction.atomic():
        Dispatch.objects.create(sender=dispatch.sender, kind="send", request_id="once")
