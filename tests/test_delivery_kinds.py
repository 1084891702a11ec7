"""What a hook can carry comes in registered kinds (sessions_app/hooks/delivery.py): comments
from sessions_app, messages from messaging. "Pending" is written once per kind, as its
`waiting` queryset; the one query every hook asks is built from those querysets."""

import itertools
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from messaging.models import SessionMessage
from sessions_app.hooks import delivery
from sessions_app.models import Comment, Session

pytestmark = pytest.mark.django_db


def test_comments_come_before_messages_and_messages_before_file_notices_in_an_answer():
    assert [kind.name for kind in delivery.kinds()] == ["comment", "message", "file_notice"]


@pytest.mark.parametrize(
    "comment_state, message_state",
    itertools.product(
        ["none", "waiting", "delivered", "offered long ago", "offered just now"],
        ["none", "waiting", "delivered", "read", "delivered and read", "offered long ago", "offered long ago and read", "waiting held", "waiting native"],
    ),
)
def test_the_hooks_question_agrees_with_each_kinds_queryset(comment_state, message_state):
    me = Session.objects.create(kind=Session.Kind.HOOK, title="me")
    other = Session.objects.create(kind=Session.Kind.HOOK, title="other")
    now = timezone.now()
    # Offered and not confirmed past RELAYBAY_REOFFER_SECONDS (docs/rules.md §2.6): offered again.
    offered = {"long ago": now - timedelta(hours=1), "just now": now}
    # Rows of another session never count for this one.
    Comment.objects.create(session=other, session_name="other", body="x")
    SessionMessage.objects.create(sender=me, sender_name="me", recipient=other, recipient_name="other", body="x")
    if comment_state != "none":
        when = next((at for words, at in offered.items() if words in comment_state), now)
        Comment.objects.create(
            session=me,
            session_name="me",
            body="c",
            delivered_at=None if comment_state == "waiting" else when,
            offered_at=when if "offered" in comment_state else None,
        )
    if message_state != "none":
        SessionMessage.objects.create(
            sender=other,
            sender_name="other",
            recipient=me,
            recipient_name="me",
            body="m",
            delivered_at=now if "delivered" in message_state or "offered" in message_state else None,
            offered_at=offered["long ago"] if "offered" in message_state else None,
            read_at=now if "read" in message_state else None,
            state=SessionMessage.State.HELD if "held" in message_state else SessionMessage.State.SENT,
            channel=SessionMessage.Channel.NATIVE if "native" in message_state else SessionMessage.Channel.MCP,
        )
    expected = {kind.name for kind in delivery.kinds() if kind.waiting(me.pk).exists()}
    assert {kind.name for kind in delivery.pending(me.pk)} == expected
    assert ("comment" in expected) == (comment_state in ("waiting", "offered long ago"))
    assert ("message" in expected) == (message_state in ("waiting", "offered long ago"))  # held and native messages wait on no hook


def test_what_waits_is_found_through_the_pending_index_not_by_walking_delivered_unread_mail():
    """Every hook asks whether anything waits, and every send counts what waits against the
    unread cap. Most delivered messages are never acknowledged, so a recipient's unread mail
    grows without bound; the two questions must walk only what is undelivered, or offered and
    not confirmed (docs/rules.md §2.6). On SQLite (no statistics) the index is chosen by its
    shape: message_pending leads with the columns both questions test, so it outranks
    message_unread whatever their creation order, and message_offered holds only the offered."""
    from django.db import connection

    from messaging import fleet

    me = Session.objects.create(kind=Session.Kind.HOOK, title="me")
    other = Session.objects.create(kind=Session.Kind.HOOK, title="other")
    now = timezone.now()
    SessionMessage.objects.bulk_create(
        SessionMessage(sender=other, sender_name="other", recipient=me, recipient_name="me", body=f"m{i}", delivered_at=now)
        for i in range(30)
    )
    waiting = SessionMessage.objects.create(sender=other, sender_name="other", recipient=me, recipient_name="me", body="new")
    asked = []

    def keep(execute, sql, params, many, context):
        asked.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        assert [kind.name for kind in delivery.pending(me.pk)] == ["message"]
        assert fleet._waiting_up_to_cap(me.pk, now) == [waiting.pk]
    with connection.cursor() as cursor:
        columns = connection.introspection.get_constraints(cursor, SessionMessage._meta.db_table)["message_pending"]["columns"]
        assert columns == ["recipient_id", "delivered_at", "id"]
        if connection.vendor == "sqlite":
            # The statements as they run, their values bound as parameters.
            for sql, params in asked:
                cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
                plan = [row[-1] for row in cursor.fetchall() if row[-1].startswith(("SEARCH", "SCAN")) and "sessions_app_session" not in row[-1] and "CONSTANT ROW" not in row[-1]]
                assert plan and all(re.search(r"INDEX (message|comment|file_notice)_(pending|offered) ", step) for step in plan), plan


def test_the_inbox_count_on_every_board_page_searches_its_own_partial_indexes():
    """Each board page counts what waits on the owner (messaging/reads.inbox_querysets), one
    queryset a partial index. Undelivered mail makes message_pending tempting for a held native
    message's `delivered_at IS NULL`; on SQLite (no statistics) message_native_held leads with the
    query's equalities, so it is searched instead of every undelivered message being walked."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from messaging import reads

    me = Session.objects.create(kind=Session.Kind.HOOK, title="me")
    other = Session.objects.create(kind=Session.Kind.HOOK, title="other")
    SessionMessage.objects.bulk_create(
        SessionMessage(sender=other, sender_name="other", recipient=me, recipient_name="me", body=f"m{i}") for i in range(30)
    )
    with CaptureQueriesContext(connection) as asked:
        assert reads.inbox_count() == 0
    expected = ["message_needs_owner", "message_unread", "message_held", "message_native_held"]
    assert len(asked.captured_queries) == len(expected)
    with connection.cursor() as cursor:
        columns = connection.introspection.get_constraints(cursor, SessionMessage._meta.db_table)["message_native_held"]["columns"]
        assert columns == ["state", "delivered_at", "id"]
        if connection.vendor == "sqlite":
            for query, index in zip(asked.captured_queries, expected):
                cursor.execute("EXPLAIN QUERY PLAN " + query["sql"])
                plan = [row[-1] for row in cursor.fetchall() if row[-1].startswith(("SEARCH", "SCAN"))]
                assert plan == [step for step in plan if f"INDEX {index} " in step or step.endswith(f"INDEX {index}")] and plan, (index, plan)
            cursor.execute("EXPLAIN QUERY PLAN " + asked.captured_queries[-1]["sql"])
            assert any(row[-1].startswith("SEARCH session_message USING INDEX message_native_held") for row in cursor.fetchall())


def test_a_claim_asks_again_only_the_questions_the_pending_check_answered_yes():
    """Every statement of a hook's claim is a round trip on PostgreSQL: what the pending check
    found (fresh items, items due again, by kind) is all the claim looks for."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sessions_app.models import HookLink

    me = Session.objects.create(kind=Session.Kind.HOOK, title="me")
    other = Session.objects.create(kind=Session.Kind.HOOK, title="other")
    link = HookLink.objects.create(session=me, hook_session="hook-me", exact=True)
    fresh = SessionMessage.objects.create(sender=other, sender_name="other", recipient=me, recipient_name="me", body="new")
    waiting = delivery.pending(me.pk)
    assert [(kind.name, found) for kind, found in waiting.items()] == [("message", delivery.Waiting(fresh=True, due_again=False))]
    with CaptureQueriesContext(connection) as asked:
        claimed = delivery.do_claim_pending(link, "PreToolUse", waiting, confirming=True)
    assert claimed.handles() == [f"M-{fresh.pk}"]
    looked = [q["sql"] for q in asked.captured_queries if q["sql"].startswith("SELECT") and "session_message" in q["sql"]]
    assert len(looked) == 1 and "offered_at" not in looked[0].split("WHERE")[1], looked
    # Offered and not confirmed past RELAYBAY_REOFFER_SECONDS: due again, and only that is asked.
    SessionMessage.objects.filter(pk=fresh.pk).update(offered_at=timezone.now() - timedelta(hours=1))
    waiting = delivery.pending(me.pk)
    assert [(kind.name, found) for kind, found in waiting.items()] == [("message", delivery.Waiting(fresh=False, due_again=True))]
    with CaptureQueriesContext(connection) as asked:
        assert delivery.do_claim_pending(link, "PreToolUse", waiting, confirming=True).handles() == [f"M-{fresh.pk}"]
    looked = [q["sql"] for q in asked.captured_queries if q["sql"].startswith("SELECT") and "session_message" in q["sql"]]
    assert len(looked) == 1 and "offered_at" in looked[0].split("WHERE")[1], looked


def test_a_hook_writes_its_own_feed_rows_and_its_deliveries_in_one_insert():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sessions_app.hooks.ingest import ingest_hook
    from sessions_app.models import Event

    def hook(event, **fields):
        return ingest_hook({"hook_event_name": event, "session_id": "hook-me", "cwd": "/work/proj", **fields})

    hook("SessionStart", source="startup", relaybay_session="me")
    hook("UserPromptSubmit", prompt="go")
    me = Session.objects.get(title="me")
    other = Session.objects.create(kind=Session.Kind.HOOK, title="other")
    message = SessionMessage.objects.create(sender=other, sender_name="other", recipient=me, recipient_name="me", body="new")
    with CaptureQueriesContext(connection) as asked:
        answer = hook("PostToolUse", tool_name="Bash", tool_input={"command": "ls"})
    assert answer.carried == [f"M-{message.pk}"]
    inserts = [q["sql"] for q in asked.captured_queries if re.match(r'INSERT INTO "sessions_app_event"', q["sql"])]
    assert len(inserts) == 1, inserts
    assert list(Event.objects.order_by("-id").values_list("name", flat=True)[:2]) == ["message.delivered", "hook.PostToolUse"]
