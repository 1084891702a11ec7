"""Hook calls refused for a missing or wrong token are counted, and the board warns about them
for an hour: a Claude Code session still connected with an old token delivers nothing."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.actions import do_count_refused_hooks
from sessions_app.hooks import refusals
from sessions_app.models import RefusedHooks
from tests.board_fixtures import board, owner  # noqa: F401

pytestmark = pytest.mark.django_db

EVENT = json.dumps({"hook_event_name": "PreToolUse", "session_id": "hook-old-token", "cwd": "/work"})


@pytest.fixture(autouse=True)
def fresh_throttle(monkeypatch):
    # The count is written at most once a second per process; each test starts a new second.
    monkeypatch.setattr(refusals, "_written_at", float("-inf"))
    monkeypatch.setattr(refusals, "_pending", 0)
    # The wake-up long poll tallies its refusals on a database thread, whose connection commits
    # outside any test's transaction: a tally another test left behind is cleared here.
    RefusedHooks.objects.all().delete()


def warning(board):
    page = board.get("/").content.decode()
    start = page.find('id="refused-hooks"')
    return page[start : page.find("</li>", start)] if start >= 0 else None


def test_a_hook_with_a_wrong_token_is_refused_and_the_board_warns(hook, board):
    assert warning(board) is None
    response = hook.raw(EVENT, token="an-old-token")
    assert response.status_code == 401
    shown = warning(board)
    assert "relaybay refused 1 hook call for a missing or wrong token" in shown
    assert "manage.py connect claude" in shown and "python manage.py claude_config" in shown


def test_a_hook_without_a_token_counts_too(hook, board):
    assert hook.raw(EVENT, token=None).status_code == 401
    assert "refused 1 hook call" in warning(board)


def test_refusals_within_a_second_are_counted_at_the_next_write(hook, board):
    for _ in range(3):
        assert hook.raw(EVENT, token="an-old-token").status_code == 401
    assert "refused 1 hook call" in warning(board)  # the first wrote; two wait for the next second
    refusals._written_at = float("-inf")
    assert hook.raw(EVENT, token="an-old-token").status_code == 401
    assert "refused 4 hook calls" in warning(board)


def test_hooks_with_the_token_are_not_counted(hook, board):
    hook("PreToolUse", "hook-good-token")
    assert warning(board) is None


def test_the_warning_ends_after_a_quiet_hour_and_a_new_streak_starts_afresh(board):
    long_ago = timezone.now() - timedelta(hours=2)
    do_count_refused_hooks(count=7, now=long_ago)
    assert warning(board) is None
    do_count_refused_hooks(count=1)
    assert "refused 1 hook call" in warning(board)


def test_a_database_that_cannot_take_the_tally_still_answers_401(hook, monkeypatch):
    # The tally is a side note: a locked database must not turn the caller's 401 into a 503.
    from django.db import OperationalError

    from sessions_app import actions

    def locked(**_):
        raise OperationalError("database is locked")

    monkeypatch.setattr(actions, "do_count_refused_hooks", locked)
    assert hook.raw(EVENT, token="an-old-token").status_code == 401
