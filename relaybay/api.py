"""The one NinjaAPI: routers per app, token auth, domain errors mapped in one place."""

from ninja import NinjaAPI
from ninja.errors import AuthenticationError, ValidationError

from .auth import TokenAuth
from .errors import RelaybayError

api = NinjaAPI(
    title="relaybay API",
    version="1",
    description="Hooks, desktop sessions and messages between sessions. Every route needs `Authorization: Bearer <RELAYBAY_TOKEN>`.",
    auth=TokenAuth(),
    urls_namespace="api",
)


@api.exception_handler(RelaybayError)
def relaybay_error(request, exc):
    return api.create_response(request, {"detail": exc.message}, status=exc.status)


@api.exception_handler(AuthenticationError)
def unauthorized(request, exc):
    return api.create_response(
        request,
        {"detail": "Missing or wrong token: send Authorization: Bearer <RELAYBAY_TOKEN> (python manage.py claude_config prints it)."},
        status=401,
    )


@api.exception_handler(ValidationError)
def invalid(request, exc):
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', [])[1:]) or 'body'}: {e.get('msg', 'invalid')}" for e in exc.errors
    )
    return api.create_response(request, {"detail": f"Invalid request: {problems}.", "errors": exc.errors}, status=422)


api.add_router("/", "sessions_app.api.router")
api.add_router("/", "messaging.api.router")
