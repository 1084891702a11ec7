"""POST /api/hooks: every event recorded, bad input refused with a clear 4xx and nothing written."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Event, HookLink, Session

pytestmark = pytest.mark.django_db


def counts():
    return Session.objects.count(), HookLink.objects.count(), Event.objects.count()


def test_it_records_every_event_of_a_turn(hook):
    for event in ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"]:
        hook(event, "h-1")
    names = list(Event.objects.filter(hook_session="h-1", name__startswith="hook.").order_by("id").values_list("name", flat=True))
    assert names == [
        "hook.SessionStart",
        "hook.UserPromptSubmit",
        "hook.PreToolUse",
        "hook.PostToolUse",
        "hook.Stop",
        "hook.SessionEnd",
    ]


def test_it_answers_an_unknown_event_with_an_empty_object_and_records_it(hook):
    assert hook("SomethingNew", "h-1") == {}
    assert Event.objects.filter(name="hook.SomethingNew").count() == 1


@pytest.mark.parametrize(
    "body, sentence",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        (json.dumps({"hook_event_name": "Stop"}), "no session_id"),
        (json.dumps({"session_id": "h-1"}), "no hook_event_name"),
        (json.dumps({"session_id": None, "hook_event_name": "Stop"}), "has no session_id"),
        (json.dumps({"session_id": " ", "hook_event_name": "Stop"}), "has a blank session_id"),
        (json.dumps({"session_id": 12, "hook_event_name": "Stop"}), "has a session_id that is not text (a JSON number)"),
        (json.dumps({"session_id": ["h-1"], "hook_event_name": "Stop"}), "has a session_id that is not text (a JSON array)"),
        (json.dumps({"session_id": "h-1", "hook_event_name": {"a": 1}}), "has a hook_event_name that is not text (a JSON object)"),
    ],
)
def test_it_refuses_bad_payloads_and_writes_nothing(hook, body, sentence):
    before = counts()
    response = hook.raw(body)
    assert response.status_code == 400
    assert sentence in response.json()["detail"]
    assert counts() == before


def test_it_refuses_a_payload_over_the_cap_with_413(hook, settings):
    settings.RELAYBAY_MAX_PAYLOAD = 1000
    before = counts()
    body = json.dumps({"session_id": "h-1", "hook_event_name": "PostToolUse", "tool_response": "x" * 2000})
    response = hook.raw(body)
    assert response.status_code == 413
    assert "over 1000 bytes" in response.json()["detail"]
    assert counts() == before


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_it_refuses_a_missing_or_wrong_token_with_401(hook, token):
    before = counts()
    response = hook.raw(json.dumps({"session_id": "h-1", "hook_event_name": "Stop"}), token=token)
    assert response.status_code == 401
    assert "Bearer" in response.json()["detail"]
    assert counts() == before


def test_it_truncates_a_large_tool_response_in_storage(hook, settings):
    settings.RELAYBAY_STORED_FIELD_CHARS = 100
    hook("PostToolUse", "h-1", tool_name="Read", tool_response={"content": "y" * 5000})
    stored = Event.objects.get(name="hook.PostToolUse").data["tool_response"]
    assert len(stored) < 200
    assert "truncated" in stored


def test_it_never_stores_message_text_from_message_tool_calls(hook):
    hook("PreToolUse", "h-1", tool_name="mcp__relaybay__message_send", tool_input={"body": "secret plans", "to": "bob"})
    hook("PostToolUse", "h-1", tool_name="mcp__relaybay__messages_list", tool_response={"messages": [{"body": '"secret plans"'}]})
    assert "secret plans" not in json.dumps(list(Event.objects.values_list("data", flat=True)))


def test_a_replayed_event_is_recorded_as_replay(hook):
    assert hook("UserPromptSubmit", "h-1", replay=True) == {}
    event = Event.objects.get(name="hook.UserPromptSubmit")
    assert event.replay


def test_a_later_event_moves_last_seen_forward(hook):
    # The row's creation already sets last_seen_at: only a later event can show it is kept.
    hook("SessionStart", "h-1")
    long_ago = timezone.now() - timedelta(hours=1)
    Session.objects.update(last_seen_at=long_ago)
    HookLink.objects.update(last_event_at=long_ago)
    hook("UserPromptSubmit", "h-1")
    assert Session.objects.get().last_seen_at > long_ago


def test_a_hook_writes_its_feed_rows_in_one_insert_with_what_it_changed_of_the_link(hook):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    hook("SessionStart", "h-one-pass", source="startup", cwd="/src/one")
    with CaptureQueriesContext(connection) as queries:
        hook("PreToolUse", "h-one-pass", cwd="/src/one", tool_name="Bash", relaybay_native={"session": {"name": "one-7f"}, "socket": "/tmp/cc-socks/1.sock"})
    inserts = [q["sql"] for q in queries if q["sql"].startswith('INSERT INTO "sessions_app_event"')]
    assert len(inserts) == 1, inserts
    assert Event.objects.filter(hook_session="h-one-pass", name__in=["link.native_name", "hook.PreToolUse"]).count() == 2
