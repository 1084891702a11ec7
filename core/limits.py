"""The message limits the MCP tools' descriptions quote (docs/rules.md §4.8), with their defaults.

relaybay/settings.py reads each from the environment with the default here; the http MCP server
takes them from the settings, and the stdio server, which runs without Django, asks relaybay's
JSON API for them (GET /api/message_limits). This module must not import Django.
"""

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    sends_per_minute: int = 10  # RELAYBAY_SENDS_PER_MINUTE
    unread_cap: int = 50  # RELAYBAY_UNREAD_CAP
    dedupe_seconds: int = 30  # RELAYBAY_DEDUPE_SECONDS
    request_id_hours: int = 24  # RELAYBAY_REQUEST_ID_HOURS

    @classmethod
    def from_settings(cls, settings):
        """The limits a relaybay runs with, from its Django settings."""
        return cls(
            sends_per_minute=settings.RELAYBAY_SENDS_PER_MINUTE,
            unread_cap=settings.RELAYBAY_UNREAD_CAP,
            dedupe_seconds=settings.RELAYBAY_DEDUPE_SECONDS,
            request_id_hours=settings.RELAYBAY_REQUEST_ID_HOURS,
        )

    def as_dict(self):
        return asdict(self)
