"""The two credentials relaybay knows (docs/rules.md §6) and the auth every route declares.

The agents' token (RELAYBAY_TOKEN) is in every session's hook and MCP config, so any agent
holds it: it calls what hooks, MCP servers and desktop sessions call. The owner's token
(RELAYBAY_OWNER_TOKEN, kept only in data/owner-token) is for the owner's scripts and
relaybay's own management commands: it calls everything, the routes the board reserves for
the owner too. The board itself is the owner's staff login (`owner_required`).
"""

import functools
import hmac
from enum import StrEnum

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse
from ninja.security import HttpBearer

from .errors import ErrorCode, RelaybayError, error_body

TOKEN_REFUSED = (
    "Missing or wrong token: send Authorization: Bearer <RELAYBAY_TOKEN> (the agents' token, kept in data/token); "
    "a CLI connected with an old one: run `.venv/bin/python manage.py connect` for it again."
)
OWNER_TOKEN_REFUSED = (
    "Missing or wrong token: this route is the owner's; send Authorization: Bearer <the owner token> "
    "(kept in data/owner-token, or RELAYBAY_OWNER_TOKEN)."
)
OWNER_ONLY = (
    "This is the owner's to do: the agents' token (RELAYBAY_TOKEN) cannot. Do it on the board, or from the "
    "owner's own script with the owner token (data/owner-token). Nothing was changed."
)


# The board's pages are the owner's: their Django staff account (docs/rules.md §5.1).
owner_required = staff_member_required(login_url="login")


class Credential(StrEnum):
    """Who a bearer token speaks for; a route's `request.auth`."""

    AGENT = "agent"
    OWNER = "owner"


def _same(token, secret):
    return bool(token) and bool(secret) and hmac.compare_digest(token.encode(), secret.encode())


def credential_of(token):
    """The credential `token` is, or None."""
    if _same(token, settings.RELAYBAY_OWNER_TOKEN):
        return Credential.OWNER
    if _same(token, settings.RELAYBAY_TOKEN):
        return Credential.AGENT
    return None


def is_owner(request):
    """Whether the call came with the owner's token (a route's request.auth, or an MCP call's)."""
    return getattr(request, "auth", None) == Credential.OWNER


def owner_credential(token):
    """The owner's credential, or the refusal: 403 for the agents' token, 401 for anything else."""
    credential = credential_of(token)
    if credential == Credential.OWNER:
        return credential
    if credential == Credential.AGENT:
        raise RelaybayError(OWNER_ONLY, code=ErrorCode.OWNER_ONLY)
    raise RelaybayError(OWNER_TOKEN_REFUSED, code=ErrorCode.UNAUTHORIZED)


class AgentAuth(HttpBearer):
    """A route agents call (hooks, MCP, desktop sessions): the agents' token or the owner's."""

    def authenticate(self, request, token):
        return credential_of(token)


class AsyncAgentAuth(HttpBearer):
    """The same check for `async def` routes: django-ninja runs a sync check of an async route
    on a thread of its own, a hop the hook path cannot afford."""

    async def authenticate(self, request, token):
        return credential_of(token)


class OwnerAuth(HttpBearer):
    """A route the board reserves for the owner: the owner's token only. The agents' token is
    refused with OWNER_ONLY, so an agent is told the route is not its to call."""

    def __call__(self, request):
        return owner_credential(bearer_token(request))

    def authenticate(self, request, token):
        return owner_credential(token)


class AsyncOwnerAuth(HttpBearer):
    """OwnerAuth for `async def` routes."""

    def __call__(self, request):
        return self.authenticate(request, bearer_token(request))

    async def authenticate(self, request, token):
        return owner_credential(token)


def bearer_token(request):
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def owner_or_token_required(view):
    """The API's description (/api/openapi.json) and its docs page (/api/docs): for a program
    with either token, or the owner logged in to the board (relaybay.asgi serves both through
    the board's middleware, which knows the login). A browser is sent to log in; a program
    gets the API's 401."""

    @functools.wraps(view)
    def guarded(request, *args, **kwargs):
        user = getattr(request, "user", None)
        if credential_of(bearer_token(request)) or (user is not None and user.is_authenticated and user.is_staff):
            return view(request, *args, **kwargs)
        if "text/html" in request.headers.get("Accept", ""):
            return redirect_to_login(request.get_full_path())
        return JsonResponse(error_body(ErrorCode.UNAUTHORIZED, TOKEN_REFUSED), status=401)

    return guarded
