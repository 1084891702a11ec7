from typing import Literal

from ninja import Field, Schema

from relaybay.inputs import Name, Path


class SendIn(Schema):
    body: str = Field(description="The message text, at most 4,000 characters. Delivered as one quoted literal.")
    to: Name | None = Field(None, description="Recipient: a session title, alias, desktop id, S-<id> handle or Claude Code session id. Omit with in_reply_to to answer the parent's sender.")
    task: Name | None = Field(None, description="Task id or exact title the message belongs to.")
    in_reply_to: int | Name | None = Field(None, description="Id of the message this answers (12 or M-12); marks it read.")
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
    status: str
    note: str


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
    hook_session: Name = Field(description="Your CLAUDE_CODE_SESSION_ID.")
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


class SessionsListQuery(Schema):
    task: Name | None = None
    folder: Path | None = None
    live_only: bool = False
