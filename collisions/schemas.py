"""The files routes' schemas (docs/rules.md §7)."""

from ninja import Field, Schema

from core.inputs import Name

FILES_CALLER_HELP = "Your CLAUDE_CODE_SESSION_ID: proves which session reserves (relaybay's MCP server fills it in)."


class ReserveIn(Schema):
    paths: list[str] = Field(
        description="Paths or globs relative to your working tree's root (or absolute inside it), at most 100: "
        "src/app.py, src/*.py (* and ? within a folder), src/** (a folder and everything under it)."
    )
    exclusive: bool = Field(True, description="true: another session's edit of these files is denied; false: shared, it is warned.")
    ttl_seconds: int | None = Field(None, description="How long it holds, 60 to 86400 seconds (24 h); 3600 when left out.")
    reason: str | None = Field(None, description="Why you reserve them, shown to a session whose edit is denied or warned, and on the board.")
    session: Name | None = Field(None, description="Your own name (optional; it must be your hook session's).")
    hook_session: Name | None = Field(None, description=FILES_CALLER_HELP)


class ReleaseIn(Schema):
    paths: list[str] | None = Field(None, description="The paths or globs as you reserved them; leave out to release all of yours.")
    session: Name | None = None
    hook_session: Name | None = Field(None, description=FILES_CALLER_HELP)


class FilesListQuery(Schema):
    all_trees: bool = Field(False, description="Every working tree's, not only yours.")
    session: Name | None = None
    hook_session: Name | None = Field(None, description=FILES_CALLER_HELP)


class ReservationOut(Schema):
    id: int
    path: str
    root: str
    exclusive: bool
    reason: str
    expires_at: str
    holder: str
    holder_handle: str
    mine: bool


class EditedOut(Schema):
    path: str
    root: str
    session: str
    session_handle: str
    at: str
    tool: str
    edits: int


class ReserveOut(Schema):
    session: str
    root: str
    reservations: list[ReservationOut]
    edited_by_others: list[EditedOut]
    note: str


class ReleaseOut(Schema):
    session: str
    released: list[dict]
    not_held: list[str]


class FilesListOut(Schema):
    root: str | None
    reservations: list[ReservationOut]
    recent_edits: list[EditedOut]
