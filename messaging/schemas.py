from typing import Literal

from ninja import Field, Schema


class SendIn(Schema):
    body: str = Field(description="The message text, at most 4,000 characters. Delivered as one quoted literal.")
    to: str | None = Field(None, description="Recipient: a session title, alias, desktop id, S-<id> handle or Claude Code session id. Omit with in_reply_to to answer the parent's sender.")
    task: str | None = Field(None, description="Task id or exact title the message belongs to.")
    in_reply_to: int | str | None = Field(None, description="Id of the message this answers (12 or M-12); marks it read.")
    session: str | None = Field(None, description="Your own name (title, alias, desktop id or S-<id>).")
    session_title: str | None = Field(None, description="Your title, when you have no row yet (one is made).")
    hook_session: str | None = Field(None, description="Your CLAUDE_CODE_SESSION_ID: proves the name is yours.")


class SendOut(Schema):
    id: int
    handle: str
    to: str
    to_handle: str
    sender: str
    sender_verified: bool
    status: str
    note: str


class AckIn(Schema):
    message_id: int | str | None = Field(None, description="The message to mark read; omit to mark all your delivered unread mail read.")
    session: str | None = None
    session_title: str | None = None
    hook_session: str | None = None


class AckOut(Schema):
    session: str
    marked: int
    mark: str


class LinkIn(Schema):
    hook_session: str = Field(description="Your CLAUDE_CODE_SESSION_ID.")
    session: str | None = Field(None, description="The name to link it to (made when no row goes by it).")
    session_title: str | None = None


class LinkOut(Schema):
    session: dict
    hook_session: str
    exact: bool
    state: str
    moved: bool


class MessagesListQuery(Schema):
    session: str = Field(description="Whose mail: a name, S-<id> handle, desktop id or Claude Code session id.")
    box: Literal["inbox", "sent", "all"] = "inbox"
    unread_only: bool = False
    task: str | None = None
    limit: int = Field(20, ge=1, le=100)


class SessionsListQuery(Schema):
    task: str | None = None
    folder: str | None = None
    live_only: bool = False
