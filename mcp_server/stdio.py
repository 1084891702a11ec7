"""relaybay's MCP server over stdio: the tools of mcp_server/tools.py as a client of
relaybay's JSON API, for a Claude Code that starts one server process per session.

relaybay serves the same tools over streamable HTTP itself, at /mcp (mcp_server/http.py);
`claude_config` connects this server by default (it reaches relaybay again by itself after a
restart) and that one with --mcp-http. This one never
imports Django or touches the database: every rule lives in the actions behind the API, so a
tool and its route cannot disagree; as it starts it asks the API for the limits its tools'
descriptions quote (GET /api/message_limits). It keeps one HTTP client (one connection, kept
alive) for the life of the process. An error answer reaches the model as a ToolError carrying
the API's sentence.

Environment:
    RELAYBAY_URL            relaybay's address (default http://127.0.0.1:8000)
    RELAYBAY_TOKEN          the API token (`python manage.py claude_config --mcp` writes it in)
    RELAYBAY_CAFILE         CA bundle for an https RELAYBAY_URL with a private certificate
    CLAUDE_CODE_MESSAGING_TOKEN  set by Claude Code: its digest goes with every call as the
                            process proof, which names the caller's hook session
    CLAUDE_CODE_SESSION_ID  set by Claude Code for the stdio servers it starts: the
                            hook_session sent when a call gives none and there is no proof

Run: `python -m mcp_server.stdio` (what claude_config writes), or `python manage.py mcp`.
"""

import os

import httpx2  # the SDK's own HTTP client, already loaded with it: no second library to import
from mcp.server.mcpserver.exceptions import ToolError

from core.errors import tool_error_text
from core.limits import Limits
from mcp_server.listener import NotRelaybay, async_transport, sync_transport
from mcp_server.tools import PROVEN, READS, build_server as build_tools
from relaybay_hook.proof import PROCESS_HEADER, messaging_token, process_proof

DEFAULT_URL = "http://127.0.0.1:8000"
# Long enough for a busy SQLite writer queue, well under Claude Code's 2-minute tool budget.
REQUEST_TIMEOUT = 30.0
# The limits are asked for once, as the server starts: a relaybay that does not answer by then
# must not hold up Claude Code's start.
LIMITS_TIMEOUT = 5.0


class RelaybayAPI:
    """relaybay's JSON API, with every failure turned into a ToolError the model can act on."""

    def __init__(self, url, token, *, timeout=REQUEST_TIMEOUT):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.verify = os.environ.get("RELAYBAY_CAFILE") or True
        self._client = None

    def client(self):
        # One client for the process: its connection is kept alive from call to call, and its
        # TLS context is built once. trust_env=False: a proxy set for the agent's own traffic
        # must not sit between it and a loopback relaybay. Its transport sends nothing to a
        # listener of another account (mcp_server/listener.py).
        if self._client is None:
            self._client = httpx2.AsyncClient(
                base_url=f"{self.url}/api/",
                timeout=self.timeout,
                trust_env=False,
                transport=async_transport(self.verify),
                headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json", **self.proof_header()},
            )
        return self._client

    @staticmethod
    def proof_header():
        """The proof of the claude process that started this server: relaybay then knows the hook
        session each call speaks for, also after /clear (relaybay_hook/proof.py)."""
        token = messaging_token()
        return {PROCESS_HEADER: process_proof(token)} if token else {}

    async def request(self, method, path, *, params=None, body=None):
        if not self.token:
            raise ToolError(
                "RELAYBAY_TOKEN is not set for the relaybay MCP server. Add it to the server's env "
                "(`python manage.py claude_config --mcp` prints a ready entry) and restart the session."
            )
        try:
            response = await self.client().request(method, path, params=params, json=body)
        except NotRelaybay as refusal:
            raise ToolError(
                f"relaybay is not what answers at {self.url}: {refusal}. Nothing was sent to it. Start relaybay "
                "(`make run`), then call the tool again."
            ) from None
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            raise ToolError(
                f"relaybay is not reachable at {self.url}. Start it with `make run` (or check RELAYBAY_URL "
                "in this MCP server's environment), then call the tool again."
            ) from None
        except httpx2.TimeoutException:
            raise ToolError(
                f"relaybay at {self.url} did not answer within {self.timeout:g} s. It may be overloaded, and the "
                "call may have been stored: call the tool again in a moment, for message_send and "
                "message_broadcast with the same request_id, so nothing is sent twice."
            ) from None
        except (httpx2.UnsupportedProtocol, httpx2.InvalidURL):
            raise ToolError(
                f"RELAYBAY_URL {self.url!r} is not a usable address; set it to relaybay's http(s) address, "
                f"like {DEFAULT_URL}."
            ) from None
        except httpx2.HTTPError as error:
            raise ToolError(f"The call to relaybay at {self.url} failed ({error}); call the tool again.") from None
        return self.answer(response)

    def limits(self):
        """The limits this relaybay runs with, for the tools' descriptions. A relaybay that cannot
        say (not started yet, a wrong token) gives the defaults: its tool calls fail with the
        reason anyway."""
        if not self.token:
            return Limits()
        try:
            with httpx2.Client(timeout=LIMITS_TIMEOUT, trust_env=False, transport=sync_transport(self.verify)) as client:
                response = client.get(
                    f"{self.url}/api/message_limits",
                    headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"},
                )
            return Limits(**response.json()) if response.is_success else Limits()
        except (httpx2.HTTPError, httpx2.InvalidURL, NotRelaybay, ValueError, TypeError):
            return Limits()

    def answer(self, response):
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and isinstance(data, dict):
            return data
        if response.status_code == 401:
            raise ToolError(
                "relaybay refused this MCP server's token. Set RELAYBAY_TOKEN in the server's env to "
                "relaybay's token (`python manage.py claude_config --mcp` prints it) and restart the session."
            )
        detail = data.get("detail") if isinstance(data, dict) else None
        if isinstance(detail, str) and detail and (response.is_client_error or response.status_code == 503):
            raise ToolError(tool_error_text(data.get("code"), detail))
        raise ToolError(
            f"relaybay at {self.url} answered HTTP {response.status_code} without a usable answer; "
            "its log says why. Call the tool again once it is fixed."
        )


class StdioBackend:
    """The tools' operations as JSON API calls, proven by the session that started the process."""

    def __init__(self, api, hook_session):
        self.api = api
        self.hook_session = (hook_session or "").strip() or None

    async def call(self, operation, fields, ctx):
        if operation in PROVEN and not (fields.get("hook_session") or "").strip() and not RelaybayAPI.proof_header():
            # Without a proof (native messaging off), the session that started this process.
            if self.hook_session:
                fields["hook_session"] = self.hook_session
            elif PROVEN[operation]:
                raise ToolError(
                    "Pass hook_session: your Claude Code session id. This MCP server was not started by "
                    "Claude Code (no CLAUDE_CODE_SESSION_ID), so it cannot fill it in."
                )
        if operation in READS:
            return await self.api.request("GET", operation, params=fields)
        return await self.api.request("POST", operation, body=fields)


def build_server(*, url=None, token=None, hook_session=None):
    """The stdio MCP server; each argument defaults to the environment (see the module doc)."""
    api = RelaybayAPI(
        url or os.environ.get("RELAYBAY_URL") or DEFAULT_URL,
        token if token is not None else os.environ.get("RELAYBAY_TOKEN", ""),
    )
    own = hook_session if hook_session is not None else os.environ.get("CLAUDE_CODE_SESSION_ID", "")
    return build_tools(StdioBackend(api, own), limits=api.limits())


def serve(**options):
    """Run the server on stdin/stdout until the client closes them."""
    try:
        build_server(**options).run("stdio")
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    serve()
