from django.db import models
from django.db.models import Q

from sessions_app.models import Session, Task


class SessionMessage(models.Model):
    """A message from one session to another through the MCP channel (SPEC §4)."""

    sender = models.ForeignKey(Session, null=True, on_delete=models.SET_NULL, related_name="sent_messages")
    sender_name = models.CharField(max_length=200)
    sender_verified = models.BooleanField(default=False)
    recipient = models.ForeignKey(Session, null=True, on_delete=models.SET_NULL, related_name="received_messages")
    recipient_name = models.CharField(max_length=200)
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    body = models.TextField()
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies")
    depth = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivered_by = models.CharField(max_length=300, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    read_verified = models.BooleanField(null=True, blank=True)
    not_delivered_reason = models.CharField(max_length=300, blank=True, help_text="What the sender was told")
    needs_owner = models.BooleanField(default=False, help_text="A reply to it was refused for depth")
    owner_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "session_message"
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["recipient", "id"], condition=Q(delivered_at=None), name="message_pending"),
            models.Index(fields=["recipient", "-id"], name="message_inbox"),
            models.Index(fields=["sender", "-id"], name="message_sent"),
            models.Index(fields=["sender", "created_at"], name="message_rate"),
            models.Index(fields=["recipient"], condition=Q(read_at=None), name="message_unread"),
            models.Index(fields=["id"], condition=Q(needs_owner=True, owner_seen_at=None), name="message_needs_owner"),
        ]

    def __str__(self):
        return f"M-{self.pk} {self.sender_name} → {self.recipient_name}"

    @property
    def handle(self):
        return f"M-{self.pk}"
