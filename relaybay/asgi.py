import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "relaybay.settings")
# Build the Django app before importing anything that touches models. Static files (htmx,
# the board's script) are served from where they lie: no collectstatic step, every
# middleware stays async so a long poll holds no thread.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())


class APIHandler(ASGIHandler):
    """Django for /api/ alone, without the middleware chain.

    The JSON API is bearer-token authenticated and sets no cookies, so the board's session,
    CSRF, login, messages and header middleware have nothing to do there; yet under ASGI each
    of them runs its request and response steps on a thread hop of their own (Django's
    MiddlewareMixin), a dozen hops for every hook: the empty API view costs 2.6 times as much
    through the chain (docs/benchmarks.md, "What relaybay's serving choices buy"). The routes,
    auth and error answers are the same as through the full chain (core/api.py); the WSGI
    layout serves /api/ with it.
    """

    def load_middleware(self, is_async=False):
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        get_response = self._get_response_async if is_async else self._get_response
        self._middleware_chain = convert_exception_to_response(get_response)


api_asgi_app = APIHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from board.routing import websocket_urlpatterns  # noqa: E402
from core import hosts  # noqa: E402
from core.dbthreads import thread_of_its_own  # noqa: E402
from core.dbthreads import threads as db_threads  # noqa: E402
from core.pings import holding_sends, post_held  # noqa: E402
from mcp_server.http import mcp_asgi_app  # noqa: E402

# The API's description and docs page open with the token or the owner's board login, which
# only the board's middleware (sessions, auth) reads.
API_PAGES_FOR_THE_OWNER = {"/api/docs", "/api/openapi.json"}


async def serve_api(scope, receive, send):
    """One /api/ request: Django without the middleware chain, its sync code on a database
    thread (core/dbthreads.py), the board pings and wake-ups of what it committed handed to
    the event loop's outbox as its answer goes out; the answer never waits for them
    (core/pings.py)."""
    async with db_threads.serving() as held:

        async def answer(message):
            post_held(held)
            await send(message)

        await api_asgi_app(scope, receive, answer)


async def serve_board(scope, receive, send):
    """The board's pages and everything else outside /api/ and /mcp, through Django's whole
    chain; the pings of what a page committed (a comment, a Deliver) are handed to the loop's
    outbox as for /api/, so no page waits on the channel layer either. Its sync code runs on
    a thread of its own whose database connection is closed however the request ends, a
    request daphne cut short included (core/dbthreads.py `thread_of_its_own`)."""
    with holding_sends() as held:

        async def answer(message):
            post_held(held)
            await send(message)

        try:
            async with thread_of_its_own():
                await django_asgi_app(scope, receive, answer)
        finally:
            post_held(held)


async def http(scope, receive, send):
    path = scope["path"]
    # Only the hosts relaybay is served as, on every path (core/hosts.py): the board's chain
    # checks its own, /api/ and /mcp run no chain. /mcp checks Origin too (DNS rebinding).
    if path.startswith("/api/") or path == "/mcp":
        refused = hosts.refusal(scope, origin=path == "/mcp")
        if refused:
            await hosts.refuse(send, refused)
            return
    if path.startswith("/api/") and path not in API_PAGES_FOR_THE_OWNER:
        await serve_api(scope, receive, send)
    elif path == "/mcp":
        await mcp_asgi_app(scope, receive, send)
    else:
        await serve_board(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
