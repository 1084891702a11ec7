from typing import Literal

from ninja import Field, Schema

import engines
from core.inputs import Name, Path

REQUEST_ID_HELP = (
    "Any unique text you make for this call (a UUID). If the call fails or times out, call again with the same "
    "request_id: a repeat within 24 h returns the first answer and sends nothing twice."
)


class SendIn(Schema):
    body: str = Field(description="The message text, at most 4,000 characters. Delivered as one quoted literal.")
    to: Name | None = Field(None, description="Recipient: a session title, alias, desktop id, S-<id> handle or Claude Code session id. Omit with in_reply_to to answer the parent's sender.")
    task: Name | None = Field(None, description="Task id or exact title the message belongs to.")
    in_reply_to: int | Name | None = Field(None, description="Id of the message this answers (12 or M-12); marks it read.")
    request_id: Name | None = Field(None, description=REQUEST_ID_HELP)
    session: Name | None = Field(None, description="Your own name (title, alias, desktop id or S-<id>).")
    session_title: Name | None = Field(None, description="Your title, when you have no row yet (one is made).")
    hook_session: Name | None = Field(None, description="Your CLAUDE_CODE_SESSION_ID: proves the name is yours.")


class SendOut(Schema):
    id: int
    handle: str
    to: str
    to_handle: str
    sender: str
    sender_verified: bool
    state: str
    status: str
    note: str
    duplicate: bool
    request_id: str | None
    retry: str
    repeat: bool


class LimitsOut(Schema):
    sends_per_minute: int = Field(description="Sends (a broadcast or dry run being one) each proven Claude Code process may make in a rolling minute; senders no live hook link proves share one such budget.")
    unread_cap: int = Field(description="Undelivered messages from sessions that may wait for one recipient.")
    dedupe_seconds: int = Field(description="Within this many seconds the same text to the same recipient is not sent twice.")
    request_id_hours: int = Field(description="How long a request_id answers repeats with the first answer.")


class BroadcastIn(Schema):
    body: str = Field(description="The message text, at most 4,000 characters; each recipient gets its own copy.")
    task: Name | None = Field(None, description="Task id or exact title: its sessions receive it. Default: your own task.")
    folder: Path | None = Field(None, description="An absolute path: the live sessions working there receive it.")
    dry_run: bool = Field(False, description="Report who would receive it and how, and send nothing (it uses a rate slot).")
    request_id: Name | None = Field(None, description=REQUEST_ID_HELP)
    session: Name | None = Field(None, description="Your own name (title, alias, desktop id or S-<id>).")
    session_title: Name | None = Field(None, description="Your title, when you have no row yet (one is made).")
    hook_session: Name | None = Field(None, description="Your CLAUDE_CODE_SESSION_ID: proves the name is yours.")


class BroadcastRecipient(Schema):
    to: str
    to_handle: str
    outcome: str
    why: str
    message: str | None
    id: int | None


class BroadcastOut(Schema):
    broadcast: str | None
    dry_run: bool
    scope: str
    sender: str
    sender_verified: bool
    recipients: list[BroadcastRecipient]
    counts: dict[str, int]
    status: str
    note: str
    request_id: str | None
    retry: str
    repeat: bool


class AckIn(Schema):
    message_id: int | Name | None = Field(None, description="The message to mark read; omit to mark all your delivered unread mail read.")
    session: Name | None = None
    session_title: Name | None = None
    hook_session: Name | None = None


class AckOut(Schema):
    session: str
    marked: int
    mark: str


class LinkIn(Schema):
    hook_session: Name | None = Field(None, description="Your CLAUDE_CODE_SESSION_ID; left out, the hook session whose hooks carry the same process proof (X-Relaybay-Process).")
    session: Name | None = Field(None, description="The name to link it to (made when no row goes by it).")
    session_title: Name | None = None


class LinkOut(Schema):
    session: dict
    hook_session: str
    exact: bool
    state: str
    moved: bool


class MessagesListQuery(Schema):
    session: Name = Field(description="Whose mail: a name, S-<id> handle, desktop id or Claude Code session id.")
    box: Literal["inbox", "sent", "all"] = "inbox"
    unread_only: bool = False
    task: Name | None = None
    limit: int = Field(20, ge=1, le=100)
    hook_session: Name | None = Field(None, description="Your CLAUDE_CODE_SESSION_ID: proves the mail is yours (a session with an exact hook link is listed for itself alone).")


class SessionsListQuery(Schema):
    task: Name | None = None
    folder: Path | None = None
    engine: Literal[engines.names()] | None = Field(None, description="Only sessions of this CLI.")
    live_only: bool = False
