from ninja import Schema


class Error(Schema):
    detail: str


class WaitOut(Schema):
    status: str
    text: str = ""


class DesktopIn(Schema):
    desktop_id: str
    title: str | None = None
    aliases: list[str] | None = None
    folder: str | None = None
    status: str | None = None


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
    sender: str
    recipient: str


class DesktopEdgeOut(Schema):
    event_id: int
    sender: str
    recipient: str


class RelayIn(Schema):
    group: str
    message: dict
