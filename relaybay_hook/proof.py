"""The proof of a Claude Code process, shared by its hooks and its http MCP calls.

Claude Code gives hooks and an http MCP server's `headersHelper` the same
CLAUDE_CODE_MESSAGING_TOKEN, a secret of the claude process (absent when native messaging is
off, CLAUDE_CODE_HARBOR_KITE=0). Both send its digest, never the token, as X-Relaybay-Process:
the hook client with every hook, the helper (bin/relaybay-mcp-headers) once per MCP
connection. relaybay keeps the digest on the hook link, so an MCP call speaks for the hook
session its process has now, also after /clear or /resume.
"""
import sys

from relaybay_hook import env

PROCESS_HEADER = 'X-Relaybay-Process'


def sha256_hex(data):
    # One C module rather than hashlib (a few ms): the hook client computes this on every hook.
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def process_proof(token):
    """The digest relaybay matches between a process's hooks and its MCP calls."""
    return sha256_hex(b'relaybay-process:' + token.encode('utf-8', 'surrogateescape'))


def messaging_token():
    return env.clean(env.getenv('CLAUDE_CODE_MESSAGING_TOKEN') or '')


_digest = None


def process_digest():
    """This process's proof, '' without a messaging token (computed once per hook)."""
    global _digest
    if _digest is None:
        token = messaging_token()
        _digest = process_proof(token) if token else ''
    return _digest


def hook_headers():
    """The header lines a hook post carries: the proof, when the process has a token."""
    digest = process_digest()
    return ('%s: %s' % (PROCESS_HEADER, digest),) if digest else ()


def headers_helper():
    """headersHelper mode: print the JSON object of headers Claude Code adds to the connection."""
    token = messaging_token()
    headers = '{"%s": "%s"}' % (PROCESS_HEADER, process_proof(token)) if token else '{}'
    sys.stdout.write(headers + '\n')
    return 0
