"""message_broadcast (docs/rules.md §4.8): recipients derived from a task (the sender's by default) or a
folder's live sessions, never the sender or an ended session; inbound policies apply; one rate
slot per call; one row per recipient sharing a broadcast id; a per-recipient report; reaching
nobody is an error. Through POST /api/message_broadcast."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from messaging.models import Dispatch, SessionMessage
from sessions_app.actions import do_save_task, do_update_session
from sessions_app.models import Event

from .board_fixtures import owner  # noqa: F401
from .message_personas import clock, context_of, counts, detail, quoted, rb  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(rb):
    """Task "ledger": lead (the sender), two live workers (one busy, one idle with its wake-up
    hook waiting), one ended, one desktop session that never linked; and an outsider."""
    task = do_save_task(title="ledger")
    rows = {
        "lead": rb.live("lead", "hook-lead"),
        "busy": rb.live("busy", "hook-busy", busy=True),
        "idle": rb.live("idle", "hook-idle"),
        "gone": rb.live("gone", "hook-gone"),
        "desk": rb.desktop("desk-1", "desk"),
    }
    rb.end("hook-gone")
    for row in rows.values():
        do_update_session(session=row, task=task)
    rb.live("outsider", "hook-out")
    rows["task"] = task
    return rows


def broadcast(rb, **fields):
    return rb.api.post("/message_broadcast", {"session": "lead", "hook_session": "hook-lead", **fields})


def report(answer):
    return {entry["to"]: entry["outcome"] for entry in answer["recipients"]}


def test_a_broadcast_reaches_the_senders_task_but_not_the_sender_ended_sessions_or_outsiders(rb, team):
    response = broadcast(rb, body="stand-up in 5")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert report(answer) == {"busy": "not delivered yet", "idle": "not delivered yet", "desk": "not delivered yet"}
    assert answer["scope"] == f'task "ledger" (T-{team["task"].pk})'
    assert answer["broadcast"].startswith("B-")
    rows = SessionMessage.objects.filter(broadcast_id=int(answer["broadcast"][2:]))
    assert sorted(rows.values_list("recipient__title", flat=True)) == ["busy", "desk", "idle"]
    assert {m.task_id for m in rows} == {team["task"].pk}
    by_name = {e["to"]: e for e in answer["recipients"]}
    assert by_name["busy"]["why"] == "Not delivered yet: it reaches it at its next tool call or prompt."
    assert by_name["desk"]["why"].startswith("Not delivered: it never linked its own hook session")
    assert quoted("stand-up in 5") in context_of(rb.tool("hook-busy"))
    assert {e["message"] for e in answer["recipients"]} == {m.handle for m in rows}


def test_task_and_folder_choose_other_recipients(rb, team):
    other = do_save_task(title="docs")
    do_update_session(session=rb.live("writer", "hook-w"), task=other)
    assert report(broadcast(rb, body="hi docs", task="docs").json()) == {"writer": "not delivered yet"}
    rb.start("hook-n", "neighbour", cwd="/work/shared")
    rb.start("hook-s", "sleeper", cwd="/work/shared")
    rb.end("hook-s")
    answer = broadcast(rb, body="hi folder", folder="/work/shared").json()
    assert report(answer) == {"neighbour": "not delivered yet"}
    assert answer["scope"] == "folder /work/shared"


def test_inbound_policies_apply_per_recipient(rb, team):
    rb.inbound("busy", "refuse")
    rb.inbound("idle", "hold")
    answer = broadcast(rb, body="policy check").json()
    assert report(answer) == {"busy": "refused", "idle": "held", "desk": "not delivered yet"}
    assert answer["counts"] == {"not delivered yet": 1, "held": 1, "refused": 1}
    assert not SessionMessage.objects.filter(recipient=team["busy"]).exists()
    assert SessionMessage.objects.get(recipient=team["idle"]).state == "held"


def test_a_broadcast_writes_its_messages_and_their_feed_rows_with_one_insert_each(rb, team):
    """Whatever its fan-out: the messages in one INSERT, their feed rows (each recipient's
    session.message and message.sent, and message.held for one that holds) and, last, the
    broadcast's own message.broadcast in another."""
    rb.inbound("idle", "hold")
    with CaptureQueriesContext(connection) as queries:
        answer = broadcast(rb, body="one statement").json()
    inserts = [q["sql"].split("(", 1)[0] for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert inserts.count('INSERT INTO "session_message" ') == 1
    assert inserts.count('INSERT INTO "sessions_app_event" ') == 1
    by_handle = {entry["message"]: entry["to"] for entry in answer["recipients"]}
    feed = list(Event.objects.filter(name__in=["session.message", "message.sent", "message.held", "message.broadcast"]).order_by("pk"))
    assert [(e.name, by_handle[f"M-{e.data['message']}"]) for e in feed[:-1]] == [
        ("session.message", "busy"), ("message.sent", "busy"),
        ("session.message", "idle"), ("message.sent", "idle"), ("message.held", "idle"),
        ("session.message", "desk"), ("message.sent", "desk"),
    ]  # fmt: skip
    sender = feed[0].data["from"]
    assert (feed[-1].name, feed[-1].data) == (
        "message.broadcast",
        {"broadcast": answer["broadcast"], "from": sender, "scope": answer["scope"], "dry_run": False, **answer["counts"]},
    )
    assert {m.pk: m.recipient_name for m in SessionMessage.objects.all()} == {int(h[2:]): to for h, to in by_handle.items()}


def test_each_recipients_duplicate_is_named_in_the_report(rb, team):
    """The duplicates of all recipients are looked up in one statement
    (fleet.firsts_of_duplicates): each recipient's line names its own. (That one broadcast
    wakes each idle recipient is shown with the real CLI: tests/e2e/test_claude_wakeup.py.)"""
    do_update_session(session=rb.live("idle2", "hook-idle2"), task=team["task"])
    single = rb.sent(body="same text", to="idle", session="lead", hook_session="hook-lead")
    first = broadcast(rb, body="same text").json()
    assert {e["to"]: (e["outcome"], e["message"]) for e in first["recipients"]}["idle"] == ("already sent", single["handle"])
    assert report(first) == {"busy": "not delivered yet", "idle": "already sent", "idle2": "not delivered yet", "desk": "not delivered yet"}
    again = broadcast(rb, body="same text").json()
    assert {e["to"]: e["message"] for e in again["recipients"]} == {e["to"]: e["message"] for e in first["recipients"]}
    assert again["counts"] == {"already sent": 4}
    assert SessionMessage.objects.count() == 4


def test_an_idle_recipient_whose_wake_up_hook_waits_is_reported_delivering_now(rb, team):
    from sessions_app.hooks.delivery import do_register_waiter

    # What GET /api/hooks/wait does first: register itself as the session's waiter.
    assert do_register_waiter("hook-idle", "w1")
    assert report(broadcast(rb, body="wake").json())["idle"] == "delivering now"


def test_an_idle_recipient_whose_wake_up_hook_stopped_polling_is_reported_not_delivered_yet(rb, team):
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.models import HookLink

    # A waiter registered once, then nothing: its hook ended or relaybay restarted under it.
    HookLink.objects.filter(hook_session="hook-idle").update(waiter="w1", waiter_polled_at=timezone.now() - timedelta(minutes=5))
    assert report(broadcast(rb, body="wake").json())["idle"] == "not delivered yet"


@pytest.mark.parametrize(
    "setup, fields, code, phrase",
    [
        ("no task", {}, "invalid_input", "you belong to no task, so pass task"),
        ("alone", {}, "broadcast_reaches_nobody", "would reach nobody"),
        ("all refuse", {}, "broadcast_reaches_nobody", "every recipient refuses it"),
        (None, {"folder": "/nowhere"}, "broadcast_reaches_nobody", "would reach nobody: folder /nowhere has no session besides you"),
    ],
)
def test_a_broadcast_that_would_reach_nobody_is_refused_and_writes_nothing(rb, team, setup, fields, code, phrase):
    if setup == "no task":
        do_update_session(session=team["lead"], task=None)
    elif setup == "alone":
        for name in ("busy", "idle", "desk"):
            do_update_session(session=team[name], task=None)
    elif setup == "all refuse":
        for name in ("busy", "idle", "desk"):
            rb.inbound(team[name].handle, "refuse")
    before = counts()
    response = broadcast(rb, body="anyone?", **fields)
    assert response.status_code == (400 if code == "invalid_input" else 403)
    assert response.json()["code"] == code
    assert phrase in detail(response)
    assert counts() == before


def test_a_dry_run_reports_and_sends_nothing_but_uses_a_rate_slot(rb, team):
    before = SessionMessage.objects.count()
    answer = broadcast(rb, body="draft", dry_run=True).json()
    assert answer["dry_run"] is True and answer["broadcast"] is None
    assert report(answer) == {"busy": "not delivered yet", "idle": "not delivered yet", "desk": "not delivered yet"}
    assert SessionMessage.objects.count() == before
    assert Dispatch.objects.filter(sender=team["lead"], kind="dry_run").count() == 1
    # Its feed row alone, with no message's before it.
    (event,) = Event.objects.filter(name__startswith="message.")
    assert (event.name, event.data["dry_run"], event.data["not delivered yet"]) == ("message.broadcast", True, 3)


def test_one_broadcast_is_one_rate_slot_whatever_its_fan_out(rb, team, clock, settings):
    settings.RELAYBAY_SENDS_PER_MINUTE = 3
    for i in range(2):
        assert broadcast(rb, body=f"round {i}").status_code == 200
    assert broadcast(rb, body="dry", dry_run=True).status_code == 200
    before = counts()
    refused = broadcast(rb, body="one too many")
    assert refused.status_code == 429
    assert "You sent 3 messages or broadcasts in the last minute" in detail(refused)
    assert counts() == before
    assert SessionMessage.objects.filter(sender=team["lead"]).count() == 6
    clock.at(60)
    assert broadcast(rb, body="next minute").status_code == 200


def test_events_name_the_broadcast_and_never_carry_its_text(rb, team):
    answer = broadcast(rb, body="secret plan zebracorn").json()
    event = Event.objects.get(name="message.broadcast")
    assert event.data["broadcast"] == answer["broadcast"]
    assert event.data["not delivered yet"] == 3
    assert not Event.objects.filter(data__icontains="zebracorn").exists()
    sent = Event.objects.filter(name="message.sent", data__broadcast=answer["broadcast"])
    assert sent.count() == 3


def test_the_board_groups_a_broadcasts_rows(rb, team, client, owner):
    answer = broadcast(rb, body="grouped").json()
    rb.sent(body="single", to="busy", session="lead", hook_session="hook-lead")
    number = answer["broadcast"][2:]
    client.force_login(owner)
    page = client.get(f"/messages/?broadcast={number}").content.decode()
    assert page.count(f"broadcast B-{number}</a>") == 3
    assert 'id="broadcast-filter"' in page
    assert quoted("single") not in page and ">single<" not in page
