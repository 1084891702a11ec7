"""What a session's hook client tells the person about itself — its spool moved aside, events
set aside, another account's listener on relaybay's address (docs/hook-client.md) — reaches the
board too: the client sends it with its next post that relaybay answers (X-Relaybay-Notice),
and relaybay records it as the session's hook.client_notice event. The client's half is in
tests/test_hook_client_safety.py."""

import json

import pytest

from sessions_app.models import Event

pytestmark = pytest.mark.django_db


def test_a_notice_with_a_hook_becomes_an_event_of_the_session(hook):
    hook("SessionStart", "h-notice", source="startup")
    notice = "relaybay's spool /home/p/.relaybay/spool.jsonl is a directory: it was moved aside to …"
    answer = hook.raw(json.dumps({"hook_event_name": "PreToolUse", "session_id": "h-notice", "cwd": "/work/proj", "tool_name": "Bash",
                                  "tool_input": {"command": "ls"}}), **{"X-Relaybay-Notice": notice})
    assert answer.status_code == 200
    [event] = Event.objects.filter(name="hook.client_notice")
    assert event.data == {"notice": notice} and event.hook_session == "h-notice" and event.session_id is not None


def test_a_replayed_event_carries_no_notice_and_an_empty_one_records_nothing(hook):
    hook("SessionStart", "h-quiet", source="startup")
    body = json.dumps({"hook_event_name": "Stop", "session_id": "h-quiet", "cwd": "/work/proj"})
    hook.raw(body, **{"X-Relaybay-Replay": "1", "X-Relaybay-Notice": "from a replay"})
    hook.raw(body, **{"X-Relaybay-Notice": "   "})
    assert not Event.objects.filter(name="hook.client_notice").exists()
