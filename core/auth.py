import functools
import hmac

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse
from ninja.security import HttpBearer

from .errors import ErrorCode, error_body

TOKEN_REFUSED = "Missing or wrong token: send Authorization: Bearer <RELAYBAY_TOKEN> (python manage.py claude_config prints it)."


def token_matches(token):
    return bool(token) and hmac.compare_digest(token.encode(), settings.RELAYBAY_TOKEN.encode())


class TokenAuth(HttpBearer):
    """Every API route needs the relaybay token (Authorization: Bearer <token>)."""

    def authenticate(self, request, token):
        return token_matches(token) or None


class AsyncTokenAuth(HttpBearer):
    """The same check for `async def` routes: django-ninja runs a sync check of an async route
    on a thread of its own, a hop the hook path cannot afford."""

    async def authenticate(self, request, token):
        return token_matches(token) or None


def bearer_token(request):
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def owner_or_token_required(view):
    """The API's description (/api/openapi.json) and its docs page (/api/docs): for a program
    with the token, or the owner logged in to the board (relaybay.asgi serves both through
    the board's middleware, which knows the login). A browser is sent to log in; a program
    gets the API's 401."""

    @functools.wraps(view)
    def guarded(request, *args, **kwargs):
        user = getattr(request, "user", None)
        if token_matches(bearer_token(request)) or (user is not None and user.is_authenticated and user.is_staff):
            return view(request, *args, **kwargs)
        if "text/html" in request.headers.get("Accept", ""):
            return redirect_to_login(request.get_full_path())
        return JsonResponse(error_body(ErrorCode.UNAUTHORIZED, TOKEN_REFUSED), status=401)

    return guarded
