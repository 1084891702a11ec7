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
"""

import functools

from daphne.cli import CommandLineInterface
from daphne.server import Server
from twisted.internet import reactor  # the asyncio reactor daphne.server installs

HEADER_TIMEOUT = 10


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

    def run(self, args):
        timeout = self.parser.parse_args(args).header_timeout
        self.server_class = functools.partial(HeaderTimeoutServer, header_timeout=timeout)
        super().run(args)


if __name__ == "__main__":
    CommandLine.entrypoint()
