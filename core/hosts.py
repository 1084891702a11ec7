"""The host names relaybay is served as: settings.ALLOWED_HOSTS, one list for every path.

A page on another site can reach a relaybay on 127.0.0.1 under a name of its own (DNS
rebinding: evil.example resolves to 127.0.0.1 once the page has loaded), and its requests then
carry `Host: evil.example`. Django checks the Host of the board's requests in its middleware
(CommonMiddleware), but under daphne neither /api/ nor /mcp runs that chain (relaybay/asgi.py),
so relaybay.asgi asks `refusal` before any path is served, with Django's own matching, and /mcp
checks Origin too, as the MCP specification asks of servers against DNS rebinding. Under the WSGI
layout /api/ does pass the chain, and its refusal gets the same JSON answer (`bad_request`,
relaybay/urls.py's handler400).
"""

import json
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import JsonResponse
from django.http.request import split_domain_port, validate_host
from django.views import defaults

from core.errors import ErrorCode, error_body

NOT_SERVED = "relaybay is not served as {name!r}; RELAYBAY_ALLOWED_HOSTS names the hosts it answers to besides loopback."


def is_served(host):
    """Whether `host` (a Host header: a name or address and maybe a port) is one relaybay is served as."""
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def refusal(scope, *, origin=False):
    """The sentence refusing an ASGI request for a host relaybay is not served as (with `origin`,
    also for a page of another origin), or None. A request without Host names the address it
    reached, as Django reads it."""
    host = _header(scope, b"host")
    if host is None:
        host = scope["server"][0] if scope.get("server") else "unknown"
    if not is_served(host):
        return NOT_SERVED.format(name=host)
    # No Origin: not a browser's cross-site request (Claude Code, the hook client, curl).
    sent_from = _header(scope, b"origin") if origin else None
    if sent_from is not None and not is_served(urlsplit(sent_from).netloc):
        return NOT_SERVED.format(name=sent_from)
    return None


def _header(scope, name):
    """A header's value, several joined with commas as Django joins them (no host matches that)."""
    values = [value.decode("latin-1") for key, value in scope.get("headers") or () if key == name]
    return ",".join(values) if values else None


async def refuse(send, sentence):
    """Answer 400 with the JSON error every API answer has."""
    body = json.dumps(error_body(ErrorCode.HOST_NOT_SERVED, sentence)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bad_request(request, exception):
    """Django's 400 page, and for /api/ refused for its Host (the WSGI layout) the JSON answer."""
    if isinstance(exception, DisallowedHost) and request.path.startswith("/api/"):
        name = request.META.get("HTTP_HOST") or request.META.get("SERVER_NAME", "unknown")
        return JsonResponse(error_body(ErrorCode.HOST_NOT_SERVED, NOT_SERVED.format(name=name)), status=400)
    return defaults.bad_request(request, exception)
