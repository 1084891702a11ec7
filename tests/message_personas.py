"""Personas and helpers shared by the messaging tests (docs/rules.md §4).

Every session is made the way a real client makes it: hook rows through POST /api/hooks,
desktop rows through POST /api/desktop. Only the owner's comments are written with the
board's action, because the board is the only way they are written.
"""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from messaging.models import Dispatch, SessionMessage
from sessions_app.actions import do_update_session, do_write_comment
from sessions_app.directory import find_sessions
from sessions_app.identity import HEARD_FROM_RECENTLY
from sessions_app.models import Comment, Event, HookLink, Session
from tests.conftest import OWNER_TOKEN

COUNTED = (Session, HookLink, SessionMessage, Dispatch, Event, Comment)


def counts():
    """Rows of every table a messaging write could touch; a refused write leaves them equal."""
    return {model.__name__: model.objects.count() for model in COUNTED}


def row(name):
    """The one row going by a title (test setup names rows uniquely)."""
    return Session.objects.get(title=name)


def link(hook_session):
    return HookLink.objects.select_related("session").get(hook_session=hook_session)


def process_exited(hook_session):
    """The Claude Code process behind a live link is gone without a SessionEnd (a crash, a
    restart): relaybay last heard from it longer ago than identity.HEARD_FROM_RECENTLY, and it
    reported no messaging socket (docs/rules.md §1.5)."""
    long_ago = timezone.now() - HEARD_FROM_RECENTLY - timedelta(minutes=1)
    assert HookLink.objects.filter(hook_session=hook_session).update(last_event_at=long_ago, waiter_polled_at=None) == 1


def own_hook_session(name):
    """The hook id that proves a row's mail is its own: its live exact link's, else its newest
    exact link's; None for a row that never linked itself (docs/rules.md §4.4)."""
    [session] = find_sessions(name)
    exact = [each for each in session.newest_links() if each.exact]
    proving = [each for each in exact if each.live] or exact
    return proving[0].hook_session if proving else None


class Relaybay:
    """One test's relaybay, driven like the hook client and the MCP server drive it."""

    def __init__(self, hook, api):
        self.hook = hook
        self.api = api

    # Sessions

    def start(self, hook_session, name=None, *, source="startup", cwd=None):
        """SessionStart as the hook client posts it; `name` is RELAYBAY_SESSION."""
        # Desktop rows live under /desk/, so a terminal here is only guessed to one on purpose.
        fields = {"source": source, "cwd": cwd or "/work/proj"}
        if name is not None:
            fields["relaybay_session"] = name
        return self.hook("SessionStart", hook_session, **fields)

    def live(self, name, hook_session, *, busy=False):
        """A terminal session started with RELAYBAY_SESSION=name: an exact, live link."""
        self.start(hook_session, name)
        if busy:
            self.prompt(hook_session)
        return link(hook_session).session

    def unnamed(self, hook_session, *, cwd=None):
        """A terminal session started without RELAYBAY_SESSION: an exact link to a hook row of
        its own, named after its folder (docs/rules.md §1.5)."""
        self.start(hook_session, cwd=cwd)
        assert link(hook_session).exact
        return link(hook_session).session

    def guessed(self, hook_session, *, cwd):
        """A terminal session nobody named, started in the folder of the only desktop row there
        without a live link: a guessed link to that row (docs/rules.md §1.2)."""
        self.start(hook_session, cwd=cwd)
        assert not link(hook_session).exact
        return link(hook_session).session

    def exited(self, hook_session):
        process_exited(hook_session)

    def desktop(self, desktop_id, title=None, *, aliases=None, folder=None):
        data = {"desktop_id": desktop_id, "folder": folder or f"/desk/{desktop_id}"}
        if title is not None:
            data["title"] = title
        if aliases is not None:
            data["aliases"] = aliases
        response = self.api.post("/desktop", data)
        assert response.status_code == 200, response.content
        return Session.objects.get(desktop_id=desktop_id)

    def prompt(self, hook_session, prompt="go on"):
        return self.hook("UserPromptSubmit", hook_session, prompt=prompt)

    def tool(self, hook_session, tool_name="Bash", **fields):
        return self.hook("PreToolUse", hook_session, tool_name=tool_name, tool_input=fields or {"command": "ls"})

    def stop(self, hook_session):
        return self.hook("Stop", hook_session, stop_hook_active=False)

    def end(self, hook_session):
        return self.hook("SessionEnd", hook_session, reason="exit")

    def inbound(self, session, policy):
        """The owner's script sets a session's inbound policy, with the owner token (docs/rules.md §6)."""
        response = self.api.post(f"/sessions/{session}/inbound", {"policy": policy}, token=OWNER_TOKEN)
        assert response.status_code == 200, response.content
        return response.json()

    def give_aliases(self, session, aliases):
        """The owner edits a row's aliases on the board."""
        return do_update_session(session=session, aliases=aliases)

    def comment(self, session, body):
        return do_write_comment(session=session, body=body).comment

    # The MCP channel's operations through the JSON API

    def send(self, **fields):
        return self.api.post("/message_send", fields)

    def sent(self, **fields):
        """A send that must be accepted; its answer JSON."""
        response = self.send(**fields)
        assert response.status_code == 200, response.content
        return response.json()

    def ack(self, **fields):
        return self.api.post("/message_ack", fields)

    def session_link(self, **fields):
        return self.api.post("/session_link", fields)

    def messages(self, session, **params):
        """A session's messages as it lists them itself: with its own hook id when it has an
        exact link, which it needs (docs/rules.md §4.4)."""
        own = own_hook_session(session)
        if own and "hook_session" not in params:
            params["hook_session"] = own
        response = self.api.get("/messages_list", session=session, **params)
        assert response.status_code == 200, response.content
        return response.json()["messages"]


@pytest.fixture
def rb(hook, api):
    return Relaybay(hook, api)


def detail(response):
    return response.json()["detail"]


def context_of(answer):
    """The delivery text of a hook answer (additionalContext), or None."""
    return answer.get("hookSpecificOutput", {}).get("additionalContext")


def quoted(body):
    """How a body reaches a session: one JSON string literal (docs/rules.md §2.4)."""
    return json.dumps(body, ensure_ascii=False)


class Clock:
    """django.utils.timezone.now, set by the test: created_at and every window read it."""

    START = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def __init__(self):
        self.now = self.START

    def __call__(self):
        return self.now

    def at(self, seconds):
        self.now = self.START + timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(timezone, "now", clock)
    return clock
