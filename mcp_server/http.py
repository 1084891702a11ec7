"""relaybay's MCP server over streamable HTTP, served by relaybay itself at /mcp.

The tools of mcp_server/tools.py, in the same server processes as the JSON API and
behind the same bearer token, with no process per Claude Code session. A tool runs the JSON
route's own body on relaybay's database threads (core/dbthreads.py): the same schema, the
same action, the same answer and the same error sentence as `POST /api/message_send`, with no
HTTP hop.

Who calls: an http MCP server is not told which Claude Code session calls it. Claude Code runs
the entry's `headersHelper` once per connection with CLAUDE_CODE_MESSAGING_TOKEN, a secret of
the claude process that its hooks see too; the helper (mcp_server/headers_helper.py) sends
its digest as X-Relaybay-Process and the hook client reports the same digest with each hook.
The call's hook_session, when it gives none, is then the hook session that process's hooks
last reported: it follows the process across /clear and /resume. The sender rules are those of
an explicit hook_session; a missing or unknown proof is a call without one.

The SDK serves it statelessly (any relaybay process may answer any call, as the scale-out
layout needs) with plain JSON answers. Its session manager needs a running task group, which
an ASGI lifespan would give; daphne runs no lifespan, so it starts with the first call and
lives as long as the process's event loop.
"""

import asyncio
import json

from django.conf import settings
from django.db import InterfaceError, OperationalError
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError

from messaging import api as routes
from messaging.schemas import AckIn, BroadcastIn, LinkIn, MessagesListQuery, SendIn, SessionsListQuery
from collisions import api as files_api
from collisions.schemas import FilesListQuery, ReleaseIn, ReserveIn
from core.api import database_unavailable_detail, invalid_detail
from core.auth import TOKEN_REFUSED, acredential_of, caller_process
from core.dbthreads import threads as db_threads
from core.errors import ErrorCode, RelaybayError, error_body, tool_error_text
from core.limits import Limits
from mcp_server.tools import PROVEN, build_server
from core.inputs import is_identifier_text
import engines
from sessions_app import directory
from sessions_app.actions import do_note_unheard_session
from sessions_app.models import HookLink

# Each operation: the JSON route (a plain sync view) and the schema the route reads its input with.
OPERATIONS = {
    "message_send": (routes.message_send, SendIn),
    "message_broadcast": (routes.message_broadcast, BroadcastIn),
    "messages_list": (routes.messages_list, MessagesListQuery),
    "message_ack": (routes.message_ack, AckIn),
    "session_link": (routes.session_link, LinkIn),
    "sessions_list": (routes.sessions_list, SessionsListQuery),
    "files_reserve": (files_api.files_reserve, ReserveIn),
    "files_release": (files_api.files_release, ReleaseIn),
    "files_list": (files_api.files_list, FilesListQuery),
}
HOOK_SESSION_MAX = HookLink._meta.get_field("hook_session").max_length
NO_PROOF = (
    "Pass hook_session: your Claude Code session id (the SessionStart note names it). relaybay knows no live "
    "hook session of the Claude Code process making this call: its MCP entry has no headersHelper, the process "
    "runs without CLAUDE_CODE_MESSAGING_TOKEN (CLAUDE_CODE_HARBOR_KITE=0), or its hooks have not reached relaybay."
)


def cli_session(meta):
    """The engine and session id a CLI puts in a tool call's `_meta` (its engine's mcp_session:
    Codex's `x-codex-turn-metadata`), or (None, ''). The CLI writes it, not the model
    (docs/mcp.md)."""
    engine, hook_session = engines.mcp_caller(meta)
    if not isinstance(hook_session, str) or not 0 < len(hook_session) <= HOOK_SESSION_MAX:
        return None, ""
    return (engine, hook_session) if hook_session.strip() and is_identifier_text(hook_session) else (None, "")


def _operate(operation, fields, proof, credential=None, named=(None, "")):
    """One tool call's database step: fill in the hook session the CLI named (`named`: its
    engine and the id) or the proven one, then the route's body."""
    route, schema = OPERATIONS[operation]
    engine, cli_session = named
    if cli_session:
        do_note_unheard_session(engine=engine.name, hook_session=cli_session)
    if operation in PROVEN:
        # A CLI that names the calling session with every call: its id wins over one the model wrote.
        fields["hook_session"] = cli_session or routes.proven_hook_session(fields.get("hook_session"), caller_process(credential, proof))
        if PROVEN[operation] and not (fields["hook_session"] or "").strip():
            raise ToolError(tool_error_text(ErrorCode.SENDER_REFUSED, NO_PROOF))
    try:
        data = schema.model_validate(fields)
    except ValidationError as error:
        raise ToolError(tool_error_text(ErrorCode.INVALID_REQUEST, invalid_detail(error.errors(include_url=False)))) from None
    return route(ProvenCall(proof, credential), data)


class ProvenCall:
    """What a route reads of its request when a tool runs its body: the caller's process proof,
    and the credential its bearer token is (request.auth, core/auth.py)."""

    def __init__(self, proof, credential=None):
        self.headers = {directory.PROCESS_HEADER: proof} if proof else {}
        self.auth = credential


class DirectBackend:
    """The tools' operations inside relaybay: the routes' bodies on the database threads."""

    async def call(self, operation, fields, ctx):
        headers = ctx.headers or {}
        proof = directory.process_proof(headers.get(directory.PROCESS_HEADER.lower()))
        credential = await acredential_of(_token(headers.get("authorization", "")))
        named = cli_session(ctx.request_context.meta)
        try:
            return await db_threads.run(_operate, operation, fields, proof, credential, named)
        except RelaybayError as error:
            raise ToolError(tool_error_text(error.code, error.message)) from None
        except (OperationalError, InterfaceError) as error:
            raise ToolError(tool_error_text(ErrorCode.DATABASE_UNAVAILABLE, database_unavailable_detail(error))) from None


class MCPApp:
    """/mcp: the token check (the agents' token or the owner's), then the SDK's streamable-HTTP handler."""

    def __init__(self, manager):
        self.manager = manager
        self._running = None
        self._task = None

    async def __call__(self, scope, receive, send):
        if not await acredential_of(_bearer(scope)):
            await _refuse(send)
            return
        await self._started()
        await self.manager.handle_request(scope, receive, send)

    async def _started(self):
        if self._running is None:
            self._running = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())
        await self._running.wait()

    async def _run(self):
        async with self.manager.run():
            self._running.set()
            await asyncio.Future()  # until the event loop ends with the process


def _bearer(scope):
    for name, value in scope["headers"]:
        if name == b"authorization":
            return _token(value.decode("latin-1"))
    return ""


def _token(authorization):
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _refuse(send):
    body = json.dumps(error_body(ErrorCode.UNAUTHORIZED, TOKEN_REFUSED)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"www-authenticate", b"Bearer")]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def asgi_app(server):
    """`server` (an SDK MCPServer) as relaybay serves MCP: stateless, JSON answers, behind the token."""
    # relaybay.asgi refuses a Host or Origin relaybay is not served as before a request reaches
    # /mcp (core/hosts.py): the board's and the API's one list and matching, and the API's JSON
    # 400. The SDK's own check, with a list and answers of its own, stays off.
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return MCPApp(server.session_manager)


def mcp_server():
    """The MCP server relaybay serves, its tools' descriptions quoting the settings' limits."""
    return build_server(DirectBackend(), limits=Limits.from_settings(settings))


mcp_asgi_app = asgi_app(mcp_server())
