"""Connections that send half a request header and then nothing: how long the server keeps them.

    .venv/bin/python bench/half_open.py --url http://127.0.0.1:8765 [--connections 400] [--limit 150]

Opens `--connections` sockets to a running relaybay (`make run PORT=8765`), sends each the
first lines of a request but never the blank line that ends its header, and watches when the
server closes each one, timed from that connection's last byte. Meanwhile an ordinary request is timed, to show the server still
answers. Prints when the connections were closed (first, median, last) and how many were still
open at `--limit` seconds; asserts nothing.
"""

import argparse
import json
import selectors
import socket
import statistics
import sys
import time
import urllib.parse
import urllib.request

HALF_HEADER = b"GET /api/sessions_list HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: half-open\r\n"


def open_half(address, count):
    """`count` connections, each sent half a header; with the moment each sent its last byte."""
    sockets, sent = [], []
    for _ in range(count):
        sock = socket.create_connection(address, timeout=5)
        sock.sendall(HALF_HEADER)
        sent.append(time.monotonic())
        sock.setblocking(False)
        sockets.append(sock)
    return sockets, sent


def watch(sockets, sent, limit):
    """Seconds from each socket's last byte to the server closing it (None: still open `limit`
    seconds after the last socket's)."""
    selector = selectors.DefaultSelector()
    for i, sock in enumerate(sockets):
        selector.register(sock, selectors.EVENT_READ, i)
    closed = [None] * len(sockets)
    while selector.get_map() and time.monotonic() - sent[-1] < limit:
        for key, _ in selector.select(timeout=0.2):
            try:
                data = key.fileobj.recv(65536)
            except ConnectionError:
                data = b""
            if not data:
                closed[key.data] = time.monotonic() - sent[key.data]
                selector.unregister(key.fileobj)
    for sock in sockets:
        sock.close()
    return closed


def ordinary_request(url, token):
    request = urllib.request.Request(f"{url}/api/sessions_list", headers={"Authorization": f"Bearer {token}"} if token else {})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    return status, (time.monotonic() - started) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", default="")
    parser.add_argument("--connections", type=int, default=400)
    parser.add_argument("--limit", type=float, default=150)
    parser.add_argument("--json")
    args = parser.parse_args()
    parts = urllib.parse.urlsplit(args.url)
    sockets, sent = open_half((parts.hostname, parts.port), args.connections)
    status, ms = ordinary_request(args.url, args.token)
    closed = watch(sockets, sent, args.limit)
    times = [t for t in closed if t is not None]
    result = {
        "connections": args.connections,
        "closed": len(times),
        "open_at_limit": len(closed) - len(times),
        "limit_s": args.limit,
        "first_s": min(times) if times else None,
        "median_s": statistics.median(times) if times else None,
        "last_s": max(times) if times else None,
        "ordinary_request": {"status": status, "ms": round(ms, 1)},
    }
    print(f"{args.connections} half-open connections to {args.url}: {len(times)} closed by the server, "
          f"{result['open_at_limit']} still open after {args.limit:.0f} s")
    if times:
        print(f"closed after their last byte: first {result['first_s']:.1f} s, median {result['median_s']:.1f} s, last {result['last_s']:.1f} s")
    print(f"an ordinary request meanwhile: {status} in {ms:.1f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
