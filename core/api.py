"""The one NinjaAPI: routers per app, each route's credential (core/auth.py), domain errors mapped in one place."""

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import JsonResponse
from redis.exceptions import RedisError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from . import inputs
from .auth import TOKEN_REFUSED, OwnerAuth, owner_or_token_required
from .errors import ErrorCode, RelaybayError, error_body


class StrictParser(Parser):
    """Every route's JSON body is read by core/inputs.py's rules (size, numbers, depth)."""

    def parse_body(self, request):
        return inputs.read_json_body(request)


api = NinjaAPI(
    title="relaybay API",
    version="1",
    description="Hooks, desktop sessions and messages between sessions. Every route needs `Authorization: Bearer <token>`: "
    "the agents' token (`RELAYBAY_TOKEN`) or, for the routes the board reserves for the owner, the owner token "
    "(`data/owner-token`). docs/rules.md §6 says which.",
    # Each route names its credential (core/auth.py); one that names none is the owner's.
    auth=OwnerAuth(),
    urls_namespace="api",
    parser=StrictParser(),
    docs_decorator=owner_or_token_required,
)


@api.exception_handler(RelaybayError)
def relaybay_error(request, exc):
    return api.create_response(request, exc.body(), status=exc.status)


@api.exception_handler(HttpError)
def http_error(request, exc):
    # django-ninja answers a body its parser refused with "Cannot parse request body"; the
    # parser's own reason (core/inputs.py) says what was wrong.
    if isinstance(exc.__cause__, RelaybayError):
        return relaybay_error(request, exc.__cause__)
    return api.create_response(request, error_body(ErrorCode.INVALID_REQUEST, str(exc)), status=exc.status_code)


@api.exception_handler(RequestDataTooBig)
def too_large(request, exc):
    return relaybay_error(request, inputs.too_large())


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def database_unavailable(request, exc):
    """The database is down or unreachable: 503 with the reason, never a bare 500. Each write
    is one transaction, so nothing of this request was kept; the hook client spools on 503."""
    return api.create_response(request, error_body(ErrorCode.DATABASE_UNAVAILABLE, database_unavailable_detail(exc)), status=503)


def database_unavailable_detail(exc):
    """The sentence for a database that is down, logged once: the API's 503 and the MCP tool error."""
    logging.getLogger("relaybay").error("database unavailable: %s", exc)
    reason = " ".join(str(exc).split())[:300]
    return f"relaybay cannot reach its database ({reason}). Nothing was stored; try again when it is back."


@api.exception_handler(RedisError)
def channel_layer_unavailable(request, exc):
    """Redis (the scale-out channel layer) is down: only the wake-up long poll needs it to
    answer; it gets a 503 that says so. Writes do not: their pings are best effort."""
    logging.getLogger("relaybay").error("channel layer unavailable: %s", exc)
    return api.create_response(
        request,
        error_body(
            ErrorCode.CHANNEL_LAYER_UNAVAILABLE,
            f"relaybay cannot reach its channel layer (Redis at {settings.REDIS_URL}): {exc}. Try again when it is back.",
        ),
        status=503,
    )


@api.exception_handler(AuthenticationError)
def unauthorized(request, exc):
    return api.create_response(request, error_body(ErrorCode.UNAUTHORIZED, TOKEN_REFUSED), status=401)


@api.exception_handler(ValidationError)
def invalid(request, exc):
    # django-ninja's locations start with where the value came from (body, query).
    detail = invalid_detail([{**e, "loc": e.get("loc", [])[1:]} for e in exc.errors])
    return api.create_response(request, error_body(ErrorCode.INVALID_REQUEST, detail, errors=exc.errors), status=422)


def invalid_detail(errors):
    """The sentence for input that failed its schema: the API's 422 and the MCP tool error."""
    problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', [])) or 'body'}: {e.get('msg', 'invalid')}" for e in errors)
    return f"Invalid request: {problems}."


def no_such_route(request, *args, **kwargs):
    return JsonResponse(error_body(ErrorCode.NO_SUCH_ROUTE, f"There is no API route {request.path}; /api/docs lists them."), status=404)


api.add_router("/", "sessions_app.api.router")
api.add_router("/", "messaging.api.router")
api.add_router("/", "collisions.api.router")
api.add_router("/", "approvals.api.router")
