"""daphne as relaybay runs it: daphne's own command line, with a short header timeout.

    .venv/bin/python -m relaybay.serve -b 127.0.0.1 -p 8000 relaybay.asgi:application

A connection that opens and sends nothing, or half a request header, holds a socket and
daphne's bookkeeping until Twisted's idle timeout closes it: 60 s, which no daphne option
changes (`--http-timeout` starts only once a request's header is complete, and would cut the
wake-up long poll). Here that timeout is HEADER_TIMEOUT seconds (`--header-timeout`): 400
connections holding half a header are all closed 10 s after their last byte instead of 60 s
(docs/scale-out.md, "Connections that send nothing"). Twisted stops the timeout once a header
is complete, so a long poll, a slow body or a websocket is not cut, and starts it again
between the requests of a kept-alive connection: a client keeps an idle connection for less
(Node's fetch 4 s, its http agent 5 s).

Off loopback relaybay does not speak plain HTTP: the agents' token and message text would cross
the network in clear. An address other than loopback is served over TLS (`-e ssl:…` with the
owner's certificate and key) or, with `--behind-tls-proxy` (or RELAYBAY_BEHIND_TLS_PROXY=1),
behind a reverse proxy that terminates TLS (docs/scale-out.md); otherwise relaybay refuses to
start and says so.
"""

import functools
import ipaddress
import os
import sys

from daphne.cli import CommandLineInterface
from daphne.server import Server
from twisted.internet import reactor  # the asyncio reactor daphne.server installs

HEADER_TIMEOUT = 10
PLAIN_HTTP_REFUSED = (
    "relaybay will not serve plain HTTP on {addresses}: the agents' token and message text would cross the "
    "network in clear. Serve HTTPS with daphne's TLS endpoint (-e ssl:PORT:interface=ADDRESS:privateKey=KEY:"
    "certKey=CERT), or put a reverse proxy that terminates TLS in front and pass --behind-tls-proxy "
    "(or RELAYBAY_BEHIND_TLS_PROXY=1); docs/scale-out.md shows Caddy and nginx. On one machine, bind 127.0.0.1."
)


def loopback(host):
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name resolves to whatever it resolves to


def _endpoint_fields(description):
    """A Twisted endpoint string's type and its fields (`tcp:8000:interface=127.0.0.1`)."""
    kind, *fields = [part.replace("\0", ":") for part in description.replace("\\:", "\0").split(":")]
    return kind, dict(field.split("=", 1) for field in fields if "=" in field)


def plain_http_addresses(args):
    """The addresses off loopback that daphne's arguments would serve plain HTTP on."""
    found = []
    if args.host and not loopback(args.host):
        found.append(args.host)
    for description in args.socket_strings:
        kind, fields = _endpoint_fields(description)
        interface = fields.get("interface", "0.0.0.0")
        if kind == "tcp" and not loopback(interface):
            found.append(interface)
    return found


class HeaderTimeoutServer(Server):
    """daphne's server, its HTTP connections closed after `header_timeout` seconds without a byte
    while no request is being answered."""

    def __init__(self, *args, header_timeout=HEADER_TIMEOUT, **kwargs):
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout

    def run(self):
        # run() makes the HTTP factory and then runs the reactor; the factory hands its timeout
        # to each connection it builds, and none is accepted before the reactor runs.
        reactor.callWhenRunning(self._set_header_timeout)
        super().run()

    def _set_header_timeout(self):
        self.http_factory.timeOut = self.header_timeout


class CommandLine(CommandLineInterface):
    def __init__(self):
        super().__init__()
        self.parser.add_argument(
            "--header-timeout",
            type=float,
            default=HEADER_TIMEOUT,
            help=f"Seconds an HTTP connection may send nothing while no request is answered on it (default {HEADER_TIMEOUT})",
        )
        self.parser.add_argument(
            "--behind-tls-proxy",
            action="store_true",
            default=os.environ.get("RELAYBAY_BEHIND_TLS_PROXY", "").strip().lower() in {"1", "true", "yes", "on"},
            help="A reverse proxy in front terminates TLS: serve plain HTTP to it on an address off loopback.",
        )

    def run(self, args):
        parsed = self.parser.parse_args(args)
        plain = plain_http_addresses(parsed)
        if plain and not parsed.behind_tls_proxy:
            sys.stderr.write(PLAIN_HTTP_REFUSED.format(addresses=", ".join(plain)) + "\n")
            raise SystemExit(2)
        timeout = parsed.header_timeout
        self.server_class = functools.partial(HeaderTimeoutServer, header_timeout=timeout)
        super().run(args)


if __name__ == "__main__":
    CommandLine.entrypoint()
