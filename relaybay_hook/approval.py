"""Permission requests: the hook that holds the CLI's PermissionRequest open while the request
waits on the owner (docs/hook-client.md, docs/rules.md §8).

The event is posted as any other; relaybay's answer names the request it opened
(`relaybay_request`), and the client long-polls `/api/approvals/<id>/wait` until it is settled,
then prints the answer relaybay gives in the CLI's shape: the owner's decision, relaybay's denial
of a headless run nobody answered, or nothing (answered in the terminal; the dialog decides).
While relaybay is down or restarting it keeps trying, as the wake-up waiter does, so a restart
loses no request. The terminal's dialog stays usable throughout: the first answer wins.

A headless run (`claude -p`: CLAUDE_CODE_SESSION_ATTENDED=0) waits too, instead of being denied
at once; RELAYBAY_APPROVAL_UNATTENDED=0 turns that off (the run is denied as without relaybay).
"""
import json
import time

from relaybay_hook import env
from relaybay_hook.conn import HOOKS_PATH, Unreachable, error_text, http_request, unavailable
from relaybay_hook.output import err, out
from relaybay_hook.proof import hook_headers

DEFAULT_APPROVAL_SECONDS = 3600  # RELAYBAY_APPROVAL_SECONDS: how long relaybay keeps a request waiting
POLL = 50                        # seconds per long poll
RECONNECT_MAX = 5.0              # while relaybay is down or restarting, try again at least this often
MARGIN = 60                      # the client's own bound sits this far past relaybay's expiry


def is_permission_request(payload):
    if b'PermissionRequest' not in payload:
        return False
    try:
        obj = json.loads(payload.decode('utf-8'))
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get('hook_event_name') == 'PermissionRequest'


def attended():
    """False for a headless run: Claude Code's `-p` says CLAUDE_CODE_SESSION_ATTENDED=0."""
    return env.getenv('CLAUDE_CODE_SESSION_ATTENDED') != '0'


def holds():
    """Whether this hook waits for the owner: always in a terminal; in a headless run unless
    RELAYBAY_APPROVAL_UNATTENDED=0."""
    if attended():
        return True
    return (env.setting('RELAYBAY_APPROVAL_UNATTENDED') or '1').strip().lower() not in ('0', 'false', 'no', 'off')


def hold(payload, with_field, timeout):
    """Post the PermissionRequest and wait for its answer; returns the exit code."""
    waits = holds()
    payload = with_field(payload, b'relaybay_waits', b'true' if waits else b'false')
    if not waits:
        # Nothing waits on the owner: the CLI denies it at once, as without relaybay.
        payload = with_field(payload, b'relaybay_hold', b'false')
    payload = with_field(payload, b'relaybay_attended', b'true' if attended() else b'false')
    try:
        status, body = http_request('POST', HOOKS_PATH, payload, hook_headers(), timeout)
    except Unreachable:
        status, body = None, None
    if status is None or unavailable(status):
        # Not reachable now: the CLI asks the person as it would without relaybay.
        from relaybay_hook import spool
        try:
            spool.spool_event(env.spool_path(), payload)
        except Exception as exc:
            err('spool error: %s' % exc)
        return 0
    if not 200 <= status < 300:
        err(error_text(status, body))
        return 0
    try:
        answer = json.loads((body or b'{}').decode('utf-8'))
    except ValueError:
        return 0
    pk = answer.get('relaybay_request') if isinstance(answer, dict) else None
    if not isinstance(pk, int) or isinstance(pk, bool):
        if body and body.strip():
            out(body)
        return 0
    return wait_for_answer(pk)


class Stopped(Exception):
    """The CLI stopped the hook (SIGTERM): the person answered in the terminal."""


def _stopped(signum, frame):
    raise Stopped()


def wait_for_answer(pk):
    """Wait for request `pk`'s answer; when the CLI stops the hook first, tell relaybay the
    request was answered in the terminal."""
    import signal
    signal.signal(signal.SIGTERM, _stopped)
    try:
        return _wait(pk)
    except Stopped:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            http_request('POST', '/api/approvals/%d/withdrawn' % pk, b'{}', hook_headers(), 2.0)
        except Exception:
            pass  # the session's next hook says the same
        return 0


def _wait(pk):
    seconds = env.float_env('RELAYBAY_APPROVAL_SECONDS', DEFAULT_APPROVAL_SECONDS)
    deadline = time.monotonic() + seconds + MARGIN
    retry = 0.5
    path = '/api/approvals/%d/wait?timeout=%d' % (pk, POLL)
    while time.monotonic() < deadline:
        try:
            status, body = http_request('GET', path, None, hook_headers(), POLL + 10)
        except Unreachable:
            status, body = None, None
        if status is None or status >= 500:
            # relaybay is down or restarting: the request is in its database; come back for it.
            time.sleep(min(retry, max(deadline - time.monotonic(), 0)))
            retry = min(retry * 2, RECONNECT_MAX)
            continue
        retry = 0.5
        if not 200 <= status < 300:
            err(error_text(status, body))
            return 0
        try:
            answer = json.loads((body or b'{}').decode('utf-8'))
        except ValueError:
            return 0
        if not isinstance(answer, dict):
            return 0
        if answer.get('state') == 'pending':
            continue
        if isinstance(answer.get('answer'), dict):
            out(json.dumps(answer['answer'], ensure_ascii=False).encode('utf-8'))
        return 0
    return 0
