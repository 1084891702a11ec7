from typing import Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from core.inputs import Name, Path

from .hooks.ingest import IDENTIFIERS, OPTIONAL_IDENTIFIERS


class Error(Schema):
    detail: str


# Every operation documents the answers every route can give besides its own: a refused input
# (400), a missing token (401), a body over the cap (413), a body that fails its schema (422),
# the database or channel layer unreachable (503).
ERRORS = {400: Error, 401: Error, 413: Error, 422: Error, 503: Error}


def _identifier(key, description, required=False):
    limit = IDENTIFIERS.get(key) or OPTIONAL_IDENTIFIERS[key]
    if required:
        return Field(min_length=1, max_length=limit, pattern=r"\S", description=description)
    return Field(None, max_length=limit, description=description)


class HookIn(Schema):
    """A hook payload as Claude Code sends it (documentation: the route reads the body itself,
    by core/inputs.py's rules and sessions_app.hooks.ingest.check_payload). Fields not
    named here are kept as text."""

    model_config = ConfigDict(extra="allow")

    session_id: str = _identifier("session_id", "Claude Code's session id.", required=True)
    hook_event_name: str = _identifier("hook_event_name", "SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SessionEnd, …", required=True)
    cwd: str | None = _identifier("cwd", "The session's working folder.")
    transcript_path: str | None = _identifier("transcript_path", "Where Claude Code keeps the transcript (never stored in events).")
    tool_name: str | None = _identifier("tool_name", "The tool of a PreToolUse / PostToolUse event.")
    prompt: str | None = None
    tool_input: dict | None = None
    tool_response: dict | list | str | None = None
    relaybay_session: str | None = Field(None, description="The RELAYBAY_SESSION name a SessionStart starts under.")


class WaitOut(Schema):
    status: str
    text: str = ""


class DesktopIn(Schema):
    desktop_id: Name
    title: Name | None = None
    aliases: list[Name] | None = None
    folder: Path | None = None
    status: Name | None = None


class SessionOut(Schema):
    handle: str
    name: str
    title: str
    aliases: list[str]
    desktop_id: str | None
    kind: str
    folder: str
    task: str | None
    link: str
    state: str


class DesktopOut(Schema):
    created: bool
    session: SessionOut


class DesktopEdgeIn(Schema):
    sender: Name
    recipient: Name


class DesktopEdgeOut(Schema):
    event_id: int
    sender: str
    recipient: str


class RelayIn(Schema):
    group: Name
    message: dict


class InboundIn(Schema):
    policy: Literal["accept", "hold", "refuse"] = Field(
        description="accept: messages from other sessions are delivered; hold: they wait in the owner's Inbox "
        "for Deliver or Deny; refuse: sends to it are refused."
    )


class InboundOut(Schema):
    session: str
    policy: str
    changed: bool
