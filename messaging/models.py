from django.db import models
from django.db.models import Q
from django.utils import timezone

from sessions_app.models import Session, Task


class Dispatch(models.Model):
    """One accepted call of message_send or message_broadcast (dry runs too): the sender's
    rate slot, and, with a request_id, the answer a repeat of the call gets back (docs/rules.md §4.8)."""

    class Kind(models.TextChoices):
        SEND = "send"
        BROADCAST = "broadcast"
        DRY_RUN = "dry_run"

    sender = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="dispatches", db_index=False)  # dispatch_sender
    # Whose rate slot it is: the process that proved the sender (messaging.actions.Caller.process),
    # "" for every sender no live link proves.
    process = models.CharField(max_length=80, blank=True, default="")
    kind = models.CharField(max_length=10, choices=Kind)
    request_id = models.CharField(max_length=200, blank=True)
    answer = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "message_dispatch"
        indexes = [
            models.Index(fields=["process", "created_at"], name="dispatch_rate"),
            models.Index(fields=["sender"], name="dispatch_sender"),
        ]
        constraints = [
            # Two repeats of one call arriving at two processes at once: one row, whichever wins.
            models.UniqueConstraint(fields=["sender", "request_id"], condition=~Q(request_id=""), name="dispatch_request_once"),
        ]

    def __str__(self):
        return f"{self.kind} {self.pk} by {self.sender_id}"

    @property
    def handle(self):
        return f"B-{self.pk}"


class SessionMessage(models.Model):
    """A message from one session to another: through relaybay's MCP channel (docs/rules.md §4), or
    Claude Code's own SendMessage as its hooks reported it (channel native, docs/rules.md §4.9: its
    text is never stored, `body` stays empty)."""

    class Channel(models.TextChoices):
        MCP = "mcp", "relaybay"
        NATIVE = "native", "Claude Code native"

    class State(models.TextChoices):
        """Where the message stands short of delivery; delivered and read are marked apart
        (`delivered_at`, `read_at`)."""

        SENT = "sent"
        HELD = "held"
        DENIED = "denied"
        EXPIRED = "expired"
        REFUSED = "refused"
        DROPPED = "dropped"
        UNREACHABLE = "unreachable"

    # Neither key has an index of its own: message_sent, message_dedupe and message_rate lead
    # with the sender, message_inbox and message_pending with the recipient. Each index more is
    # written with every message, and a broadcast writes several in one statement.
    sender = models.ForeignKey(Session, null=True, on_delete=models.SET_NULL, related_name="sent_messages", db_index=False)
    sender_name = models.CharField(max_length=200)
    sender_verified = models.BooleanField(default=False)
    recipient = models.ForeignKey(Session, null=True, on_delete=models.SET_NULL, related_name="received_messages", db_index=False)
    recipient_name = models.CharField(max_length=200)
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    body = models.TextField(blank=True)
    channel = models.CharField(max_length=10, choices=Channel, default=Channel.MCP)
    state = models.CharField(max_length=12, choices=State, default=State.SENT)
    native_id = models.CharField(max_length=100, blank=True, help_text="Claude Code's msg_id of a native message")
    native_digest = models.CharField(
        max_length=64, blank=True, help_text="Keyed digest of a native message's text, to match its delivery to its send"
    )
    held_until = models.DateTimeField(null=True, blank=True, help_text="A held message expires then")
    broadcast = models.ForeignKey(Dispatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies")
    depth = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True, help_text="When a hook answer first carried it")
    delivered_by = models.CharField(max_length=300, blank=True)
    # As a comment's (sessions_app.models.Comment, docs/rules.md §2.6).
    offered_at = models.DateTimeField(null=True, blank=True, help_text="Handed to a hook client that has not confirmed it yet, then")
    confirmed_at = models.DateTimeField(null=True, blank=True, help_text="When the recipient's hook client confirmed it printed it")
    read_at = models.DateTimeField(null=True, blank=True)
    read_verified = models.BooleanField(null=True, blank=True)
    not_delivered_reason = models.CharField(max_length=300, blank=True, help_text="What the sender was told")
    needs_owner = models.BooleanField(default=False, help_text="A reply to it was refused for depth")
    owner_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "session_message"
        ordering = ["-id"]
        indexes = [
            # What waits for a recipient: every hook's pending check, a claim, the unread cap.
            # `delivered_at` is a column too, so that SQLite, with no statistics, ranks it above
            # message_unread (one column) for those queries: by creation order it took
            # message_unread and walked every delivered but unread message of the recipient.
            models.Index(fields=["recipient", "delivered_at", "id"], condition=Q(delivered_at=None), name="message_pending"),
            # What a hook offers again: handed over, not confirmed (few, and only for a while).
            models.Index(fields=["recipient", "offered_at"], condition=Q(offered_at__isnull=False), name="message_offered"),
            models.Index(fields=["sender", "recipient", "created_at"], name="message_dedupe"),
            models.Index(fields=["id"], condition=Q(channel="mcp", state="held"), name="message_held"),
            models.Index(fields=["recipient", "-id"], name="message_inbox"),
            models.Index(fields=["sender", "-id"], name="message_sent"),
            models.Index(fields=["sender", "created_at"], name="message_rate"),
            models.Index(fields=["recipient"], condition=Q(read_at=None), name="message_unread"),
            models.Index(fields=["id"], condition=Q(needs_owner=True, owner_seen_at=None), name="message_needs_owner"),
            models.Index(fields=["native_id"], condition=~Q(native_id=""), name="message_native_id"),
            models.Index(fields=["native_digest", "id"], condition=~Q(native_digest=""), name="message_native_digest"),
            # The Inbox's held native messages, counted on every board page. Its columns are
            # the query's equalities, so that SQLite, with no statistics, searches it rather than
            # scanning message_pending (every undelivered message) for `delivered_at IS NULL`.
            models.Index(fields=["state", "delivered_at", "id"], condition=Q(channel="native", state="held"), name="message_native_held"),
        ]

    def __str__(self):
        return f"M-{self.pk} {self.sender_name} → {self.recipient_name}"

    @property
    def handle(self):
        return f"M-{self.pk}"

    # One current name everywhere (docs/rules.md §1.5): a message shows its sessions by the names
    # they go by now; the names they had when it was sent stay in sender_name and recipient_name.
    @property
    def sender_label(self):
        return self.sender.public_name if self.sender_id else self.sender_name

    @property
    def recipient_label(self):
        return self.recipient.public_name if self.recipient_id else self.recipient_name
