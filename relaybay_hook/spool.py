"""The spool: events kept while relaybay cannot be reached, replayed in order later.

An entry relaybay refuses (4xx), or that keeps failing (a 5xx, MAX_ATTEMPTS replays), is set
aside in <spool>.rejected with the answer, so it never holds back the entries behind it; the
user is told on stderr and in the hook's answer (systemMessage). Everything else keeps its
order.
"""
import fcntl
import json
import os
import time

from relaybay_hook import env
from relaybay_hook.conn import HOOKS_PATH, Unreachable, error_text, http_request, unavailable
from relaybay_hook.output import err

LOCK_WAIT = 5.0        # seconds to wait for the spool lock before giving up
REPLAY_BUDGET = 3.0    # seconds one call may spend replaying before deferring the rest
MAX_ATTEMPTS = 5       # replays of one entry failing with a 5xx before it is set aside


def rejected_path(path):
    return path + '.rejected'


def _stamp():
    now = time.time()
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(now)) + '.%06d+00:00' % int((now % 1) * 1000000)


def _entry_line(entry):
    return (json.dumps(entry) + '\n').encode('ascii')


def _spool_line(payload):
    return _entry_line({'spooled_at': _stamp(), 'payload': payload.decode('utf-8', 'surrogateescape')})


def _ensure_dir(path):
    parent = os.path.dirname(os.path.abspath(path))
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, 0o700, exist_ok=True)


class _SpoolLock(object):
    """Exclusive flock on <spool>.lock, waited for at most LOCK_WAIT seconds."""

    def __init__(self, spool):
        self.path = spool + '.lock'
        self.fd = None

    def acquire(self, wait=LOCK_WAIT):
        _ensure_dir(self.path)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait
        pause = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.fd = fd
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(pause)
                pause = min(pause * 2, 0.05)

    def release(self):
        if self.fd is not None:
            try:
                os.close(self.fd)  # closing drops the flock
            except OSError:
                pass
            self.fd = None


def _append_lines(path, lines):
    _ensure_dir(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, b''.join(lines))  # one write: an O_APPEND write lands whole
    finally:
        os.close(fd)


def _rewrite(path, lines):
    """Replace the spool with `lines` atomically (temp file + rename); caller holds the lock."""
    if not lines:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    tmp = '%s.tmp.%d' % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b''.join(lines))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def spool_event(path, payload):
    """Append one event to the spool (under the lock when it can be had)."""
    line = _spool_line(payload)
    lock = _SpoolLock(path)
    if lock.acquire():
        try:
            _append_lines(path, [line])
        finally:
            lock.release()
    else:
        # The lock holder is stuck (a hung replay). One O_APPEND write is still safe
        # against other appenders; better kept than lost.
        _append_lines(path, [line])


def _read_spool(path):
    try:
        with open(path, 'rb') as f:
            return [line for line in f.read().splitlines(True) if line.strip()]
    except FileNotFoundError:
        return []


def _set_aside(path, entry, status, answer):
    """Keep a refused entry, with relaybay's answer, where the user can look at it."""
    entry = dict(entry, rejected_at=_stamp(), status=status, answer=error_text(status, answer))
    _append_lines(rejected_path(path), [_entry_line(entry)])
    err('replay refused (%s): set aside in %s' % (entry['answer'], rejected_path(path)))


def replay_spool(path, payload, timeout):
    """Replay the spool under the lock, then (if needed) spool `payload` after the rest.

    Returns (spooled, set_aside): spooled is True when `payload` has been spooled (relaybay
    unavailable or the replay budget ran out), False when the caller should post it now;
    set_aside lists the answers of entries set aside in <spool>.rejected by this call.
    """
    set_aside = []
    lock = _SpoolLock(path)
    if not lock.acquire():
        return False, set_aside  # someone else is replaying for too long: post our own event anyway
    try:
        lines = _read_spool(path)
        if not lines:
            return False, set_aside
        started = time.monotonic()
        i = 0
        while i < len(lines):
            if time.monotonic() - started > REPLAY_BUDGET:
                _rewrite(path, lines[i:] + [_spool_line(payload)])
                return True, set_aside
            try:
                entry = json.loads(lines[i].decode('utf-8', 'surrogateescape'))
                body = entry['payload'].encode('utf-8', 'surrogateescape')
                spooled_at = env.clean(entry.get('spooled_at') or '')
                attempts = int(entry.get('attempts') or 0)
            except (ValueError, KeyError, TypeError, AttributeError):
                err('dropping an unreadable spool line')
                i += 1
                continue
            headers = ['X-Relaybay-Replay: 1']
            if spooled_at:
                headers.append('X-Relaybay-Spooled-At: ' + spooled_at)
            try:
                status, answer = http_request('POST', HOOKS_PATH, body, headers, timeout)
            except Unreachable:
                status, answer = None, None
            if status is None or unavailable(status):
                _rewrite(path, lines[i:] + [_spool_line(payload)])
                return True, set_aside
            if status >= 500:
                entry['attempts'] = attempts + 1
            if 200 <= status < 300:
                i += 1
            elif status < 500 or entry['attempts'] >= MAX_ATTEMPTS:
                _set_aside(path, entry, status, answer)
                set_aside.append(error_text(status, answer))
                i += 1
            else:
                # reachable but failing on this entry: keep it at the head for a later call,
                # counting the attempt, with the rest and the live event in order behind it
                err('replay failed (attempt %d of %d), kept: %s' % (entry['attempts'], MAX_ATTEMPTS, error_text(status, answer)))
                _rewrite(path, [_entry_line(entry)] + lines[i + 1:] + [_spool_line(payload)])
                return True, set_aside
        _rewrite(path, [])
        return False, set_aside
    finally:
        lock.release()


def set_aside_notice(path, answers):
    """The line shown to the user when this call set entries aside."""
    return 'relaybay refused %d event%s kept while it was unreachable (%s); %s in %s' % (
        len(answers), '' if len(answers) == 1 else 's', answers[0],
        'it is' if len(answers) == 1 else 'they are', rejected_path(path))
