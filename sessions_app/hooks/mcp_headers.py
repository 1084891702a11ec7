#!/usr/bin/env python3
"""The headersHelper of relaybay's http MCP server entry (stdlib only, no Django).

Claude Code runs it once per connection to the server and sends the headers it prints. It
sees CLAUDE_CODE_MESSAGING_TOKEN, a secret of the claude process that the process's hooks see
too; it prints that token's digest, never the token, as X-Relaybay-Process. The hook client
reports the same digest with each hook, so relaybay knows which hook session the MCP calls of
this process speak for. Without the token (CLAUDE_CODE_HARBOR_KITE=0 turns it off) it prints
{} and the calls carry no proof.

    python3 -S /abs/path/mcp_headers.py
"""

import sys

PROCESS_HEADER = "X-Relaybay-Process"


def process_proof(token):
    """The digest relaybay matches between a process's hooks and its MCP calls."""
    # One C module rather than hashlib (a few ms): the hook client computes this on every hook.
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256
        except ImportError:
            from hashlib import sha256
    return sha256(b"relaybay-process:" + token.encode("utf-8", "surrogateescape")).hexdigest()


def main():
    import os

    token = os.environ.get("CLAUDE_CODE_MESSAGING_TOKEN", "").strip()
    headers = '{"%s": "%s"}' % (PROCESS_HEADER, process_proof(token)) if token else "{}"
    sys.stdout.write(headers + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
