"""The two credentials relaybay knows (docs/rules.md §6) and the auth every route declares.

The agents' token (RELAYBAY_TOKEN) is in every session's hook and MCP config, so any agent
holds it: it calls what hooks, MCP servers and desktop sessions call. The owner's token
(RELAYBAY_OWNER_TOKEN, kept only in data/owner-token) is for the owner's scripts and
relaybay's own management commands: it calls everything, the routes the board reserves for
the owner too. The board itself is the owner's staff login (`owner_required`).
"""

import functools
import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from django.apps import apps
from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse
from django.utils import timezone
from ninja.security import HttpBearer

from .dbthreads import threads as db_threads
from .errors import ErrorCode, RelaybayError, error_body

TOKEN_REFUSED = (
    "Missing or wrong token: send Authorization: Bearer <RELAYBAY_TOKEN> (the agents' token, kept in data/token); "
    "a CLI connected with an old one: run `.venv/bin/python manage.py connect claude` (or connect with that CLI's "
    "name, as `manage.py connect --help` lists) again."
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


MACHINE_HEARD_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class MachineCredential:
    """A machine's token (machines/): an agents' credential for that machine's sessions only."""

    machine_id: int
    name: str


def machine_token_digest(token):
    """What relaybay keeps of a machine's token."""
    return hashlib.sha256(b"relaybay-machine:" + token.encode("utf-8", "surrogateescape")).hexdigest()


def _same(token, secret):
    return bool(token) and bool(secret) and hmac.compare_digest(token.encode(), secret.encode())


def _fixed_credential(token):
    if _same(token, settings.RELAYBAY_OWNER_TOKEN):
        return Credential.OWNER
    if _same(token, settings.RELAYBAY_TOKEN):
        return Credential.AGENT
    return None


def credential_of(token):
    """The credential `token` is, or None: the owner's, the agents', or a machine's not revoked
    (looked up on every call, so a revoked one is refused at once on every process). The
    machines app sits above core: it is reached through the app registry."""
    fixed = _fixed_credential(token)
    if fixed is not None or not token:
        return fixed
    machines = apps.get_model("machines", "Machine").objects
    machine = machines.filter(token_digest=machine_token_digest(token), revoked_at=None).first()
    if machine is None:
        return None
    now = timezone.now()
    if machine.last_heard_at is None or now - machine.last_heard_at > MACHINE_HEARD_EVERY:
        # `machine list`'s "last heard", written at most once a minute.
        machines.filter(pk=machine.pk).update(last_heard_at=now)
    return MachineCredential(machine.pk, machine.name)


async def acredential_of(token):
    """credential_of for async code: a machine's token is looked up on a database thread."""
    return _fixed_credential(token) or (await db_threads.run(credential_of, token) if token else None)


# A process of another machine speaks as `m<id>:` and the first characters of its proof, so a
# link records which machine its process runs on in its process_proof, and no machine's process
# ever passes for another's or for one of relaybay's own machine.
MACHINE_PROCESS = re.compile(r"^m([0-9]+):")


def caller_process(credential, proof):
    """The process a call speaks as: its proof, namespaced by its machine for a machine's token.
    A call without a proof speaks as no process, on any machine."""
    if proof and isinstance(credential, MachineCredential):
        prefix = f"m{credential.machine_id}:"
        return prefix + proof[: 64 - len(prefix)]
    return proof


def machine_of_process(process):
    """The id of the machine a process runs on, or None for relaybay's own machine."""
    match = MACHINE_PROCESS.match(process or "")
    return int(match.group(1)) if match else None


def is_owner(request):
    """Whether the call came with the owner's token (a route's request.auth, or an MCP call's)."""
    return getattr(request, "auth", None) == Credential.OWNER


def owner_credential(token):
    """The owner's credential, or the refusal: 403 for the agents' token, 401 for anything else
    (a machine's token too: no database lookup on the owner's routes, async ones included)."""
    credential = _fixed_credential(token)
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
        return await acredential_of(token)


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
