"""The spool: events kept while relaybay cannot be reached, replayed in order later."""
import fcntl
import json
import os
import time

from relaybay_hook import env
from relaybay_hook.conn import HOOKS_PATH, Unreachable, error_text, http_request, unavailable
from relaybay_hook.output import err

LOCK_WAIT = 5.0        # seconds to wait for the spool lock before giving up
REPLAY_BUDGET = 3.0    # seconds one call may spend replaying before deferring the rest


def _spool_line(payload):
    now = time.time()
    stamp = time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(now))
    stamp += '.%06d+00:00' % int((now % 1) * 1000000)
    entry = {'spooled_at': stamp, 'payload': payload.decode('utf-8', 'surrogateescape')}
    return (json.dumps(entry) + '\n').encode('ascii')


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


def replay_spool(path, payload, timeout):
    """Replay the spool under the lock, then (if needed) spool `payload` after the rest.

    Returns True when `payload` has been spooled (relaybay unavailable or the replay
    budget ran out), False when the caller should post it now.
    """
    lock = _SpoolLock(path)
    if not lock.acquire():
        return False  # someone else is replaying for too long: post our own event anyway
    try:
        lines = _read_spool(path)
        if not lines:
            return False
        started = time.monotonic()
        i = 0
        while i < len(lines):
            if time.monotonic() - started > REPLAY_BUDGET:
                _rewrite(path, lines[i:] + [_spool_line(payload)])
                return True
            line = lines[i]
            try:
                entry = json.loads(line.decode('utf-8', 'surrogateescape'))
                body = entry['payload'].encode('utf-8', 'surrogateescape')
                spooled_at = env.clean(entry.get('spooled_at') or '')
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
                return True
            if 200 <= status < 300:
                i += 1
            elif 400 <= status < 500:
                err('replay refused, dropped: ' + error_text(status, answer))
                i += 1
            else:
                # reachable but failing on this entry: keep it (and the rest) for a later
                # call, and do not hold the live event hostage behind it
                err('replay failed, kept: ' + error_text(status, answer))
                _rewrite(path, lines[i:])
                return False
        _rewrite(path, [])
        return False
    finally:
        lock.release()
