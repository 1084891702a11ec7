"""Benchmark-only ASGI entry: relaybay exactly as `make run` serves it, plus reference routes.

    daphne bench.empty_asgi:application

Adds, next to relaybay's own urls (bench/settings.py points ROOT_URLCONF at bench/empty_urls.py):

- POST /bench/empty        an empty django-ninja view with relaybay's bearer auth (sync def),
                           served like relaybay's /api/ routes (relaybay.asgi.serve_api)
- POST /bench/empty_async  the same view as `async def`
- POST /bench/chain/...    the same views through the board's full middleware chain
- POST /bench/bare         a bare ASGI answer in front of Django (the server's own floor)
- POST /bench/mcp          an MCP server with one empty tool, `empty`, served exactly as
                           relaybay serves /mcp (mcp_server.http.asgi_app): the MCP floor;
                           and `rows`, which answers as sessions_list does (relaybay's compact
                           text) with `count` made-up rows and no other work: what the size
                           of sessions_list's answer costs

Nothing here ships: relaybay.asgi and relaybay.urls are unchanged.
"""

import os

os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"

from relaybay import asgi as relaybay_asgi  # noqa: E402

from mcp.server.mcpserver import MCPServer  # noqa: E402

from bench.experiments import apply_app  # noqa: E402
from mcp_types import CallToolResult  # noqa: E402

from mcp_server.http import asgi_app  # noqa: E402
from mcp_server.tools import result  # noqa: E402

apply_app()


async def empty() -> dict:
    """Does nothing: the framework's floor for an MCP tool call."""
    return {}


def rows(count: int) -> CallToolResult:
    """sessions_list's answer with `count` rows shaped like its rows, made with no database work."""
    made = [
        {"handle": f"S-{i}", "name": f"http-sender-{i}-0d76e9", "title": f"http-sender-{i}-0d76e9", "aliases": [], "desktop_id": None,
         "kind": "hook", "folder": "/work/p", "task": None, "link": "exact", "state": "idle", "reachable_now": True, "why_not": ""}
        for i in range(count)
    ]  # fmt: skip
    return result({"sessions": made})


_empty_mcp = MCPServer("bench-empty", log_level="WARNING")
_empty_mcp.add_tool(empty)
_empty_mcp.add_tool(rows, structured_output=False)
empty_mcp_app = asgi_app(_empty_mcp)

BARE_BODY = b"{}"


async def _bare(scope, receive, send):
    # Drain the request body like a real view would.
    while True:
        message = await receive()
        if not message.get("more_body"):
            break
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(BARE_BODY)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": BARE_BODY})


async def application(scope, receive, send):
    if scope["type"] == "http" and scope["path"] == "/bench/mcp":
        return await empty_mcp_app(scope, receive, send)
    if scope["type"] == "http" and scope["path"] == "/bench/bare":
        return await _bare(scope, receive, send)
    if scope["type"] == "http" and scope["path"].startswith("/bench/chain/"):
        # The same views through the board's full middleware chain, for comparison.
        path = scope["path"].replace("/bench/chain/", "/bench/", 1)
        return await relaybay_asgi.application({**scope, "path": path, "raw_path": path.encode()}, receive, send)
    if scope["type"] == "http" and scope["path"].startswith("/bench/"):
        # The reference views are served as relaybay serves /api/ (relaybay.asgi.serve_api).
        return await relaybay_asgi.serve_api(scope, receive, send)
    return await relaybay_asgi.application(scope, receive, send)
