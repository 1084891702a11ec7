"""Machines: other hosts and containers whose sessions meet on this board (docs/rules.md §6).

Each has its own credential, an agents' token for its own sessions only; relaybay keeps the
token's digest, never the token."""

from django.db import models
from django.utils import timezone


class Machine(models.Model):
    name = models.CharField(max_length=64, unique=True)
    token_digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_heard_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name
