import hmac

from django.conf import settings
from ninja.security import HttpBearer

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
