from ninja import Schema

from relaybay.inputs import Name, Path


class Error(Schema):
    detail: str


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
