from datetime import datetime
from typing import Literal

from ninja import Field, Schema

import engines

from sessions_app.schemas import ERRORS, Error  # noqa: F401 - the API's shared answers


class SessionRef(Schema):
    name: str
    handle: str


class RequestOut(Schema):
    id: int
    handle: str = Field(description="`R-<id>`.")
    session: SessionRef
    engine: str = Field(description=f"The CLI it runs in: {', '.join(engines.names())}.")
    kind: str = Field(description="permission, question (asked of the person) or input (waiting at its prompt).")
    tool: str
    summary: str = Field(description="What the tool would do (the command, the path); only while it waits.")
    answerable: bool = Field(description="Whether relaybay can answer it; else it is answered in the terminal.")
    state: Literal["pending", "allowed", "denied", "answered_elsewhere", "expired"]
    scope: str = Field(description="once or session, for a decision of the owner's.")
    decided_by: str
    requested_at: datetime
    expires_at: datetime
    decided_at: datetime | None


class RequestsOut(Schema):
    pending: list[RequestOut] = Field(description="Waiting on the owner now, oldest first.")
    recent: list[RequestOut] = Field(description="Settled within the last day, newest first.")


class DecisionIn(Schema):
    decision: Literal["allow", "deny"]
    scope: Literal["once", "session"] = "once"
    message: str = Field("", max_length=2000, description="To the model, with a denial; never stored in events.")


class DecidedOut(Schema):
    id: int
    state: str


class NotPendingOut(Schema):
    detail: str
    code: str
    state: str


class AnswerOut(Schema):
    state: str = Field(description="pending (poll again), allowed, denied, answered_elsewhere, expired or gone.")
    answer: dict | None = Field(None, description="The hook answer to print, in the CLI's shape; none: print nothing.")
