"""relaybay-hook: the command-hook client for relaybay (stdlib only, no Django).

Claude Code runs it through the tiny entry script `bin/relaybay-hook`:
    python3 -S /abs/path/bin/relaybay-hook          # any hook event (event mode)
    python3 -S /abs/path/bin/relaybay-hook wait     # Stop hook with "asyncRewake": true

Event mode (`client`) reads the hook payload on stdin, POSTs it to {RELAYBAY_URL}/api/hooks
and prints the answer JSON. When relaybay cannot be reached the event is appended to a spool
file (`spool`) and the hook exits 0 at once with no output; the next call that reaches
relaybay replays the spool first, in order, marked as replay. The comments and messages an
answer carries are recorded once printed and reported with the next calls, so that relaybay
offers again only what never reached the model, and no answer repeating an item is printed
(`printed`).

Wait mode (`wait`) long-polls {RELAYBAY_URL}/api/hooks/wait for the session and exits 2 with
the delivered text on stderr (which wakes the model), otherwise exits 0.

Environment:
    RELAYBAY_URL      base URL (default http://127.0.0.1:8000)
    RELAYBAY_TOKEN    bearer token
    RELAYBAY_TOKEN_FILE  a file holding the token, read when RELAYBAY_TOKEN is unset
    RELAYBAY_SPOOL    spool file (default ~/.relaybay/spool.jsonl)
    RELAYBAY_SESSION  terminal-session name, sent with SessionStart
    RELAYBAY_WAIT     wake-up mode total wait in seconds (default 600)
    RELAYBAY_TIMEOUT  seconds for one event post (default 10)
    RELAYBAY_CAFILE   CA bundle for an https RELAYBAY_URL (optional)

Startup speed matters (it runs for every hook event). The package is imported, so its
modules are read from cached bytecode; the hot path (`client`, `env`, `conn`) uses only
modules an interpreter started with -S has already loaded plus the `_socket` extension: no
os, socket, json, re, urllib, http.client or ssl; `conn` speaks HTTP/1.1 itself. The rare
paths (spool and replay, error details, wait mode, https) live in their own modules or import
what they need inside the function that needs it. The hook never raises and exits 0, except 2
for a wake-up in wait mode. Keep it runnable by any python3 >= 3.8.
"""
