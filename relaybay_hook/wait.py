"""Wait mode: the Stop hook that wakes an idle session when mail arrives.

Claude Code: an asyncRewake hook, which wakes the model by exiting 2 with the text on stderr.
`claude -p` does not exit before its asyncRewake hooks end, so an unattended session
(CLAUDE_CODE_SESSION_ATTENDED=0) does not wait unless RELAYBAY_WAIT_UNATTENDED asks it to:
a headless worker that should sit and wait for mail.

Codex CLI (`wait --engine codex --codex PATH`, docs/rules.md §1.6): Codex waits for every hook
to end before the session is idle, so the waiter leaves the hook at once and waits in a
process of its own. It asks relaybay only whether mail waits (`nudge=1`: relaybay answers
`pending` and keeps the mail), then wakes the session with `codex queue --thread ID --message
NUDGE --resume`, a fixed prompt: the turn's UserPromptSubmit hook delivers the mail, and no
message text is on a command line. It does so only while the Codex process that ran the Stop
hook runs: a closed session is not woken.
"""
import importlib
import json
import sys
import time

from relaybay_hook import env, printed, proof
from relaybay_hook.conn import Unreachable, http_request
from relaybay_hook.output import err, exit_now

WAIT_PATH = '/api/hooks/wait'
WAIT_POLL_MAX = 50     # seconds per long poll
MIN_POLL_INTERVAL = 1.0  # never re-poll faster than this (guards a server that answers at once)
DEFAULT_WAIT = 8 * 3600  # an idle session stays wakeable this long (RELAYBAY_WAIT, claude_config --wait)
RECONNECT_MAX = 5.0    # while relaybay is down or restarting, try again at least this often
# The CLIs whose idle sessions a waiter process of the client wakes through the CLI's own
# command (an engine whose wake is "waiter", engines/): the flag → the option naming that
# command, and the client's module that wakes with it.
WAKERS = {'codex': ('--codex', 'codex_wake')}


def _quote(value):
    safe = b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~'
    return ''.join(chr(b) if b in safe else '%%%02X' % b for b in value.encode('utf-8'))


def should_wait():
    """False for an unattended session (`claude -p`), unless the user asked it to wait."""
    return env.getenv('CLAUDE_CODE_SESSION_ATTENDED') != '0' or env.flag('RELAYBAY_WAIT_UNATTENDED')


def option(args, name):
    """The value after `name` in the hook command's arguments, or None."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
    return None


def wait_mode(engine=None, args=()):
    try:
        obj = json.loads(sys.stdin.buffer.read().decode('utf-8'))
    except ValueError:
        return 0
    session_id = obj.get('session_id') if isinstance(obj, dict) else None
    if not session_id or not isinstance(session_id, str):
        return 0
    wake = None
    if engine in WAKERS:
        option_name, module_name = WAKERS[engine]
        command = option(args, option_name)
        if not command:
            return 0
        waking = importlib.import_module('relaybay_hook.' + module_name)
        wake = waking.waker(command, session_id)
        if wake is None or not waking.detached():
            return 0  # the hook's own process: the CLI goes idle while the waiter waits
    elif not should_wait():
        return 0
    deadline = time.monotonic() + env.float_env('RELAYBAY_WAIT', DEFAULT_WAIT)
    retry = MIN_POLL_INTERVAL
    # The same record of printed items as the event hooks of this process (printed.py).
    printed_file = printed.file_for(env.spool_path(), session_id=session_id)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (wake is not None and not wake.alive()):
            return 0  # the bound is reached, or the CLI process that runs the session has exited
        poll = min(WAIT_POLL_MAX, int(remaining) + (remaining % 1 > 0))  # ceil, >= 1
        last = '&last=1' if poll >= remaining else ''
        nudge = '&nudge=1' if wake is not None else ''
        path = '%s?session_id=%s&timeout=%d%s%s' % (WAIT_PATH, _quote(session_id), poll, last, nudge)
        started = time.monotonic()
        entries = printed.load(printed_file)
        answer_headers = {}
        try:
            status, body = http_request('GET', path, None, proof.hook_headers() + printed.report_headers(entries), poll + 10,
                                        answer_headers=answer_headers)
        except Unreachable:
            status, body = None, b''
        taken = printed.handles(answer_headers.get('x-relaybay-confirmed'))
        if taken:
            printed.record(printed_file, entries, taken=taken)
            entries = printed.load(printed_file)
        if status is None or status >= 500:
            # relaybay is down, restarting or without its channel layer: wait for it to come
            # back, within the bound, so the session stays wakeable across a restart.
            time.sleep(min(retry, max(deadline - time.monotonic(), 0)))
            retry = min(retry * 2, RECONNECT_MAX)
            continue
        retry = MIN_POLL_INTERVAL
        if not 200 <= status < 300 or not body:
            return 0
        try:
            answer = json.loads(body.decode('utf-8'))
        except ValueError:
            return 0
        state = answer.get('status') if isinstance(answer, dict) else None
        if state == 'pending' and wake is not None:
            wake()
            return 0
        if state == 'delivered':
            text = answer.get('text')
            if not isinstance(text, str) or not text.strip():
                return 0
            carried = printed.handles(answer_headers.get('x-relaybay-items'))
            shown = []

            def show(repeated):
                if repeated:
                    # As in event mode (client.py): not printed; relaybay offers the rest again
                    # at the session's next hook, and takes the repeated ones with its report.
                    err('a wake-up repeats %s, printed already: not printed' % ' '.join(repeated))
                    return
                sys.stderr.buffer.write(text.encode('utf-8', 'replace'))
                sys.stderr.flush()
                shown.append(True)

            try:
                printed.show_once(printed_file, carried, (), show)
            except Exception:
                return 0
            if not shown:
                return 0
            exit_now(2)  # at once, as event mode (client.py)
        if state != 'timeout':
            return 0  # replaced by a newer waiter, or anything unexpected
        pause = MIN_POLL_INTERVAL - (time.monotonic() - started)
        if pause > 0:
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
