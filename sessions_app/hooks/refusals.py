"""Counting hook calls refused for their token, cheaply: a client with an old token refuses
on every hook, so this process writes the count at most once a second."""

import threading
import time

WRITE_EVERY = 1.0

_lock = threading.Lock()
_pending = 0
_written_at = float("-inf")


def note_refused():
    """Count one refusal; returns how many to write now (0: not yet, still counted)."""
    global _pending, _written_at
    with _lock:
        _pending += 1
        now = time.monotonic()
        if now - _written_at < WRITE_EVERY:
            return 0
        count, _pending, _written_at = _pending, 0, now
        return count
