"""What a session waits on the owner for (docs/rules.md §8): a permission request the owner can
answer, a question or a prompt the person answers in the terminal."""

from django.db import models
from django.db.models import Q

import engines
from sessions_app.models import Session


class RequestQuerySet(models.QuerySet):
    def waiting(self, now):
        """Requests still waiting on the owner: pending and not past their expiry. The one
        definition of "needs you" (a pending row past expires_at reads as expired)."""
        return self.filter(state=Request.State.PENDING, expires_at__gt=now)


class Request(models.Model):
    """One thing a session waits on the owner for. Its `summary` (the command, the path, the
    question) is kept only while it waits; afterwards the row keeps the tool, the decision,
    who gave it and when."""

    class Kind(models.TextChoices):
        PERMISSION = "permission", "permission request"
        QUESTION = "question", "question"
        INPUT = "input", "waiting for input"

    class State(models.TextChoices):
        PENDING = "pending"
        ALLOWED = "allowed"
        DENIED = "denied"
        ANSWERED_ELSEWHERE = "answered_elsewhere", "answered in the terminal"
        EXPIRED = "expired"

    class Scope(models.TextChoices):
        ONCE = "once", "once"
        SESSION = "session", "for this session"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="requests")
    hook_session = models.CharField(max_length=200)
    engine = models.CharField(max_length=12, choices=Session.Engine, default=engines.DEFAULT.name)
    kind = models.CharField(max_length=12, choices=Kind)
    # Whether relaybay can answer it (a hook waits for the answer); else the terminal only.
    answerable = models.BooleanField(default=False)
    # A headless run (`claude -p`): an expired request is denied with relaybay's reason.
    attended = models.BooleanField(default=True)
    tool = models.CharField(max_length=200, blank=True)
    summary = models.TextField(blank=True)
    state = models.CharField(max_length=20, choices=State, default=State.PENDING)
    scope = models.CharField(max_length=10, choices=Scope, blank=True)
    # The deny message to the model, kept only until the waiting hook takes the answer.
    message = models.TextField(blank=True)
    decided_by = models.CharField(max_length=40, blank=True)
    requested_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    taken_at = models.DateTimeField(null=True, blank=True)

    objects = RequestQuerySet.as_manager()

    class Meta:
        ordering = ["requested_at", "id"]
        indexes = [
            models.Index(fields=["requested_at"], condition=Q(state="pending"), name="request_pending"),
            models.Index(fields=["hook_session"], condition=Q(state="pending"), name="request_pending_by_hook"),
            models.Index(fields=["-decided_at"], name="request_by_decided"),
        ]

    def __str__(self):
        return f"{self.handle} {self.tool or self.kind}"

    @property
    def cli(self):
        """The engine of the CLI that asks (engines/): what its answer can say."""
        return engines.of(self.engine)

    @property
    def handle(self):
        return f"R-{self.pk}"

    def state_at(self, now):
        """The state as the owner sees it: a pending request past its expiry is expired."""
        if self.state == self.State.PENDING and self.expires_at <= now:
            return self.State.EXPIRED
        return self.State(self.state)
