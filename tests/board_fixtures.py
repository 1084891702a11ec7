"""Personas and factories for the board's tests: the owner, sessions with hook links, messages
sent through the real actions. Import the fixtures into a test module to use them."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from messaging.actions import do_send_message
from sessions_app.hooks.ingest import ingest_hook
from sessions_app.models import Session

PASSWORD = "owner-pass-123"


def make_owner(username="owner"):
    return get_user_model().objects.create_user(username=username, password=PASSWORD, is_staff=True)


@pytest.fixture
def owner(db):
    return make_owner()


@pytest.fixture
def board(owner):
    """A test client logged in as the owner."""
    client = Client()
    client.force_login(owner)
    return client


def named_session(name, hook_session=None, folder="/work/proj"):
    """A Claude Code session that named itself at start: an exact, idle hook link."""
    hook_session = hook_session or f"hook-{name.encode().hex()[:24]}"
    ingest_hook({"hook_event_name": "SessionStart", "session_id": hook_session, "cwd": folder, "relaybay_session": name})
    session = Session.objects.get(links__hook_session=hook_session)
    session.hook_session = hook_session
    return session


def send(sender, recipient, body, **extra):
    """A message from one named session to another, through the real send action."""
    return do_send_message(
        body=body, to=recipient.handle, session=sender.title, hook_session=sender.hook_session, **extra
    ).message


def htmx_get(client, url, target):
    """What the page's fragment container fetches when a refresh ping arrives."""
    return client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=target)
