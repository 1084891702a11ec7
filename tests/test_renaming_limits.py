"""Limits a new name cannot escape (docs/rules.md §1.1, §4.2): rows made for unproven sender names
are bounded, and a desktop registration neither takes a name a running session goes by nor
stores aliases without end. (The send rate per proven process: test_loop_guards.)"""

import pytest

from sessions_app.directory import find_sessions
from sessions_app.models import Session

from .message_personas import counts, detail, rb  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(rb):
    return rb.live("bob", "hook-b")


def code(response):
    return response.status_code, response.json()["code"]


# Rows made for unproven names


def test_rows_for_unproven_sender_names_stop_at_the_setting_with_a_clear_error(rb, bob, settings):
    settings.RELAYBAY_UNPROVEN_NAMES = 3
    settings.RELAYBAY_SENDS_PER_MINUTE = 100
    for n in range(3):
        assert rb.send(body=f"hi {n}", to="bob", session=f"spam-{n}").status_code == 200
    before = counts()
    refused = rb.send(body="hi 3", to="bob", session="spam-3")
    assert code(refused) == (429, "unproven_names_full")
    assert "already keeps 3 sessions made for names no running session proves" in detail(refused)
    assert counts() == before
    # A name that already has its row, and a proven session, still write.
    assert rb.send(body="again", to="bob", session="spam-0").status_code == 200
    rb.live("alice", "hook-a")
    assert rb.send(body="proven", to="bob", session="alice", hook_session="hook-a").status_code == 200


def test_a_running_session_naming_itself_is_not_bounded_by_unproven_names(rb, bob, settings):
    settings.RELAYBAY_UNPROVEN_NAMES = 1
    assert rb.send(body="hi", to="bob", session="spam-0").status_code == 200
    assert code(rb.send(body="hi", to="bob", session="spam-1")) == (429, "unproven_names_full")
    # A terminal guessed to a desktop row names itself: its new row is linked, proven, at once.
    rb.desktop("desk-c", "planner")
    rb.guessed("hook-c", cwd="/desk/desk-c")
    sent = rb.sent(body="hello", to="bob", session="carol", hook_session="hook-c")
    assert (sent["sender"], sent["sender_verified"]) == ("carol", True)


# Desktop registration


@pytest.mark.parametrize("names", [{"aliases": ["bob"]}, {"title": "BOB"}, {"aliases": ["planner", "hook-b"]}, {"desktop_id": "bob"}])
def test_a_desktop_registration_cannot_take_a_name_a_running_session_goes_by(rb, bob, names):
    before = counts()
    refused = rb.api.post("/desktop", {"desktop_id": "squat", **names})
    assert code(refused) == (409, "name_in_use")
    assert f"is a name of {bob.handle}, a running session" in detail(refused)
    assert counts() == before
    assert find_sessions("bob") == [bob]


def test_a_desktop_keeps_registering_under_its_own_names_and_takes_those_of_ended_sessions(rb, bob):
    rb.live("carol", "hook-c")
    rb.end("hook-c")
    assert rb.api.post("/desktop", {"desktop_id": "desk-1", "title": "planner", "aliases": ["carol"]}).status_code == 200
    assert rb.api.post("/desktop", {"desktop_id": "desk-1", "title": "planner", "status": "idle"}).status_code == 200
    assert code(rb.api.post("/desktop", {"desktop_id": "desk-1", "aliases": ["carol", "bob"]})) == (409, "name_in_use")
    assert Session.objects.get(desktop_id="desk-1").aliases == ["carol"]


def test_a_desktop_registration_s_aliases_are_bounded(rb):
    refused = rb.api.post("/desktop", {"desktop_id": "squat", "aliases": [f"alias-{n}" for n in range(5000)]})
    assert code(refused) == (400, "invalid_input")
    assert "at most 20 aliases" in detail(refused)
    assert not Session.objects.exists()
    twenty = [f"alias-{n}" for n in range(20)]
    assert rb.api.post("/desktop", {"desktop_id": "desk-1", "aliases": twenty}).status_code == 200
    assert Session.objects.get(desktop_id="desk-1").aliases == twenty
