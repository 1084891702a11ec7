"""The spool: events kept while relaybay cannot be reached, replayed in order later.

The live event always goes first: a call posts its own event, and only once relaybay took it
does it replay the spool (client.py). Nothing in the spool can stop that:
- a spool that is not this account's regular file (a folder, a link, another account's), or
  that is past MAX_BYTES, is moved aside whole as `<spool>.aside-<time>` before the call posts;
- an entry relaybay refuses (4xx), that keeps failing (a 5xx, MAX_ATTEMPTS replays), that cannot
  be read, or that was kept longer than MAX_AGE is set aside in <spool>.rejected, with the
  reason, so it never holds back the entries behind it.
The call that sets something aside says so on stderr and in its answer (systemMessage), once:
what was set aside is no longer in the spool. What is set aside is bounded too (ASIDE_BYTES,
one older generation, ASIDE_AGE).
"""
import calendar
import fcntl
import json
import os
import time

from relaybay_hook import env, private
from relaybay_hook.conn import HOOKS_PATH, Unreachable, error_text, http_request, unavailable
from relaybay_hook.output import err

LOCK_WAIT = 5.0        # seconds to wait for the spool lock before giving up
REPLAY_BUDGET = 3.0    # seconds one call may spend replaying before deferring the rest
MAX_ATTEMPTS = 5       # replays of one entry failing with a 5xx before it is set aside
MAX_BYTES = env.SPOOL_MAX_BYTES  # a spool past this is moved aside whole (and is never read)
MAX_EVENT_BYTES = 2 * 1024 * 1024  # relaybay's own cap (RELAYBAY_MAX_PAYLOAD): larger is not kept
MAX_AGE = 7 * 86400.0  # an entry kept longer is set aside instead of replayed
ASIDE_BYTES = 4 * 1024 * 1024    # <spool>.rejected past this becomes <spool>.rejected.1
ASIDE_AGE = 30 * 86400.0         # set-aside files untouched this long are removed
UNREADABLE_KEPT = 4096  # characters of an unreadable line kept in <spool>.rejected


def rejected_path(path):
    return path + '.rejected'


def _stamp(now=None):
    now = time.time() if now is None else now
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(now)) + '.%06d+00:00' % int((now % 1) * 1000000)


def _entry_line(entry):
    return (json.dumps(entry) + '\n').encode('ascii')


def _spool_line(payload):
    return _entry_line({'spooled_at': _stamp(), 'payload': payload.decode('utf-8', 'surrogateescape')})


class _SpoolLock(object):
    """Exclusive flock on <spool>.lock, waited for at most LOCK_WAIT seconds."""

    def __init__(self, spool):
        self.path = spool + '.lock'
        self.fd = None

    def acquire(self, wait=LOCK_WAIT):
        private.folder(os.path.dirname(os.path.abspath(self.path)))
        fd = private.open_file(self.path, os.O_RDWR | os.O_CREAT)
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


def problem(path):
    """Why the spool cannot be used as it is (a folder, a link, another account's, too big), or
    None: an lstat, all the hot path pays."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    why = private.problem(st)
    if why is None and st.st_size > MAX_BYTES:
        why = 'holds %.0f MB, past its bound of %d MB' % (st.st_size / 1048576.0, MAX_BYTES // 1048576)
    return why


def set_aside_spool(path, why):
    """Move a spool that cannot be used out of the way; the sentence for the person."""
    try:
        aside = private.set_aside(path)
    except OSError as exc:
        return ('relaybay\'s spool %s %s and cannot be moved aside (%s): events are sent as usual but none '
                'is kept while relaybay is unreachable.' % (path, why, exc.strerror or exc))
    private.prune(os.path.dirname(os.path.abspath(path)), os.path.basename(path) + '.aside-', ASIDE_AGE)
    return ('relaybay\'s spool %s %s: it was moved aside to %s, and events are kept in a new one.' % (path, why, aside))


def spool_event(path, payload):
    """Append one event to the spool (under the lock when it can be had). Returns a sentence
    for the person when the event could not be kept, or when the spool had to be moved aside."""
    line = _spool_line(payload)
    if len(line) > MAX_EVENT_BYTES:
        return ('an event of %d bytes is larger than relaybay takes (%d): it was not kept while relaybay is '
                'unreachable.' % (len(line), MAX_EVENT_BYTES))
    notice = None
    lock = _SpoolLock(path)
    locked = lock.acquire()
    try:
        # Checked again under the lock: another call may have moved it aside meanwhile.
        why = problem(path)
        try:
            size = os.lstat(path).st_size
        except FileNotFoundError:
            size = 0
        if why is None and size + len(line) > MAX_BYTES:
            why = 'reached its bound of %d MB' % (MAX_BYTES // 1048576)
        if why:
            notice = set_aside_spool(path, why)
        # Without the lock (a hung replay holds it) one O_APPEND write is still safe against
        # other appenders: better kept than lost.
        private.append(path, line)
    finally:
        if locked:
            lock.release()
    return notice


def _set_aside(path, entry, reason):
    """Keep an entry that will not be replayed, with the reason, where the person can look."""
    rejected = rejected_path(path)
    data = _entry_line(dict(entry, rejected_at=_stamp(), answer=reason))
    try:
        st = os.lstat(rejected)
        if st.st_size + len(data) > ASIDE_BYTES or st.st_mtime < time.time() - ASIDE_AGE:
            os.replace(rejected, rejected + '.1')
    except FileNotFoundError:
        pass
    private.prune(os.path.dirname(os.path.abspath(path)), os.path.basename(rejected) + '.1', ASIDE_AGE)
    private.append(rejected, data)
    err('spooled event set aside (%s) in %s' % (reason, rejected))


def _entry(line):
    """(entry, body, spooled_at, attempts) of a spool line; raises ValueError when it is not one
    this client wrote."""
    try:
        entry = json.loads(line.decode('utf-8', 'surrogateescape'))
    except (ValueError, RecursionError):
        raise ValueError('not JSON')
    if not isinstance(entry, dict) or not isinstance(entry.get('payload'), str):
        raise ValueError('no payload')
    attempts = entry.get('attempts') or 0
    if type(attempts) is not int or not 0 <= attempts <= MAX_ATTEMPTS:
        raise ValueError('attempts is %s' % json.dumps(entry.get('attempts'))[:40])
    spooled_at = entry.get('spooled_at') or ''
    if not isinstance(spooled_at, str):
        raise ValueError('spooled_at is not a time')
    return entry, entry['payload'].encode('utf-8', 'surrogateescape'), env.clean(spooled_at), attempts


def _age(spooled_at):
    try:
        then = calendar.timegm(time.strptime(spooled_at[:19], '%Y-%m-%dT%H:%M:%S'))
    except (ValueError, OverflowError):
        return 0.0
    return time.time() - then


def replay_spool(path, timeout):
    """Replay the spool in order under the lock, after the call's own event went through.

    Returns the reasons of the entries set aside in <spool>.rejected by this call. Stops,
    keeping the rest in order, when relaybay becomes unreachable, an entry fails with a 5xx
    (counted), or the budget runs out.
    """
    set_aside = []
    lock = _SpoolLock(path)
    if not lock.acquire():
        return set_aside  # someone else is replaying: they go on
    try:
        if problem(path):
            return set_aside  # moved aside by the next call, before it posts
        lines = [line for line in private.read(path, MAX_BYTES + 1).splitlines(True) if line.strip()]
        started = time.monotonic()
        i = 0
        while i < len(lines):
            if time.monotonic() - started > REPLAY_BUDGET:
                break
            try:
                entry, body, spooled_at, attempts = _entry(lines[i])
            except ValueError as exc:
                reason = 'unreadable: %s' % exc
                _set_aside(path, {'line': lines[i][:UNREADABLE_KEPT].decode('utf-8', 'replace')}, reason)
                set_aside.append(reason)
                i += 1
                continue
            if _age(spooled_at) > MAX_AGE:
                reason = 'kept longer than %d days' % (MAX_AGE // 86400)
                _set_aside(path, entry, reason)
                set_aside.append(reason)
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
                break
            if 200 <= status < 300:
                i += 1
                continue
            if status >= 500:
                entry['attempts'] = attempts + 1
            if status < 500 or entry['attempts'] >= MAX_ATTEMPTS:
                reason = error_text(status, answer)
                _set_aside(path, dict(entry, status=status), reason)
                set_aside.append(reason)
                i += 1
                continue
            # reachable but failing on this entry: keep it at the head for a later call,
            # counting the attempt, with the rest in order behind it
            err('replay failed (attempt %d of %d), kept: %s' % (entry['attempts'], MAX_ATTEMPTS, error_text(status, answer)))
            lines[i] = _entry_line(entry)
            break
        _keep(path, lines[i:], len(lines))
        return set_aside
    finally:
        lock.release()


def _keep(path, rest, read):
    """Leave `rest` in the spool, with whatever was appended after it was read (an append
    without the lock)."""
    appended = private.read(path, MAX_BYTES + 1).splitlines(True)
    appended = [line for line in appended if line.strip()][read:]
    rest = rest + appended
    if rest:
        private.replace(path, b''.join(rest))
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def set_aside_notice(path, reasons):
    """The line shown to the person when this call set entries aside."""
    return 'relaybay set aside %d event%s kept while it was unreachable (%s); %s in %s' % (
        len(reasons), '' if len(reasons) == 1 else 's', reasons[0],
        'it is' if len(reasons) == 1 else 'they are', rejected_path(path))
