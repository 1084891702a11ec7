"""Which machine a token is (core/auth.py asks through the app registry)."""

import hashlib

from .models import Machine


def token_digest(token):
    return hashlib.sha256(b"relaybay-machine:" + token.encode("utf-8", "surrogateescape")).hexdigest()


def machine_of_token(token):
    """The machine whose credential `token` is, or None (revoked, or no machine's)."""
    if not token:
        return None
    return Machine.objects.filter(token_digest=token_digest(token), revoked_at=None).first()
