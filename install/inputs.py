"""What the person passes to `connect`, `disconnect` and `claude_config` that ends up in a
configuration file or a hook command: checked before anything is written, so no value can add
a line to relaybay's hook configuration (NAME=value lines) or break out of its quoting."""

from urllib.parse import urlsplit

from django.core.management.base import CommandError


def check_url(url):
    """relaybay's address, as written into the CLIs' configuration: http(s)://host[:port][/path],
    one line of printable characters, no user or password. Returns it."""
    if any(ord(ch) < 33 or ord(ch) == 127 for ch in url):
        raise CommandError(f"--url {url!r} holds a space, a line break or a control character: pass relaybay's address alone, like http://127.0.0.1:8000.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise CommandError(f"--url {url!r} is not an address ({error}): pass relaybay's address, like http://127.0.0.1:8000.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CommandError(f"--url {url!r} is not an http(s) address: pass relaybay's address, like http://127.0.0.1:8000.")
    if parts.username is not None or parts.query or parts.fragment or port == 0:
        raise CommandError(f"--url {url!r} carries a user, a query or a fragment: pass relaybay's address alone, like http://127.0.0.1:8000.")
    return url
