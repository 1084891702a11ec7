"""What a hook can carry comes in registered kinds (sessions_app/hooks/delivery.py): comments
from sessions_app, messages from messaging. "Pending" is written once per kind, as its
`waiting` queryset; the one query every hook asks is compiled from those querysets."""

import itertools

import pytest
from django.utils import timezone

from messaging.models import SessionMessage
from sessions_app.hooks import delivery
from sessions_app.models import Comment, Session

pytestmark = pytest.mark.django_db


def test_comments_come_before_messages_in_an_answer():
    assert [kind.name for kind in delivery.kinds()] == ["comment", "message"]


@pytest.mark.parametrize(
    "comment_state, message_state",
    itertools.product(["none", "waiting", "delivered"], ["none", "waiting", "delivered", "read", "delivered and read"]),
)
def test_the_hooks_question_agrees_with_each_kinds_queryset(comment_state, message_state):
    me = Session.objects.create(kind=Session.Kind.HOOK, title="me")
    other = Session.objects.create(kind=Session.Kind.HOOK, title="other")
    now = timezone.now()
    # Rows of another session never count for this one.
    Comment.objects.create(session=other, session_name="other", body="x")
    SessionMessage.objects.create(sender=me, sender_name="me", recipient=other, recipient_name="other", body="x")
    if comment_state != "none":
        Comment.objects.create(
            session=me, session_name="me", body="c", delivered_at=now if comment_state == "delivered" else None
        )
    if message_state != "none":
        SessionMessage.objects.create(
            sender=other,
            sender_name="other",
            recipient=me,
            recipient_name="me",
            body="m",
            delivered_at=now if "delivered" in message_state else None,
            read_at=now if "read" in message_state else None,
        )
    expected = {kind.name for kind in delivery.kinds() if kind.waiting(me.pk).exists()}
    assert {kind.name for kind in delivery.pending(me.pk)} == expected
    assert ("comment" in expected) == (comment_state == "waiting")
    assert ("message" in expected) == (message_state == "waiting")
