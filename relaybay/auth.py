import hmac

from django.conf import settings
from ninja.security import HttpBearer


class TokenAuth(HttpBearer):
    """Every API route needs the relaybay token (Authorization: Bearer <token>)."""

    def authenticate(self, request, token):
        if token and hmac.compare_digest(token.encode(), settings.RELAYBAY_TOKEN.encode()):
            return True
        return None
