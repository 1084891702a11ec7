"""What this Claude Code process's hooks printed into the model, for relaybay's confirmation
(docs/hook-client.md, "Exactly once into the model").

relaybay keeps a comment or message it handed to a hook answer *offered* until the hook
client confirms it printed it, and offers one not confirmed in time again (docs/rules.md
§2.6). So the client
- records the handles of the items it printed (`C-12`, `M-40`) in a small file of its own
  Claude Code process (of its hook session without native messaging), next to the spool,
  once the answer is out;
- reports them with its later calls (`X-Relaybay-Printed`) until relaybay says it took them
  (`X-Relaybay-Confirmed`);
- prints no answer that carries an item printed already: relaybay offers the answer's other
  items again.

The file holds one line per change, `<handle> <state> <time>`: `p` printed and not yet taken
by relaybay, `c` taken; the last line of a handle wins. Reading it is the hot path's only
cost (one open and read); writes happen only after a delivery or a confirmation. The hot
path imports nothing here beyond what the interpreter has loaded; `fcntl` and `os` are
imported by the writes.
"""
import time

from relaybay_hook import proof

try:
    import posix as _px
except ImportError:  # pragma: no cover - non-POSIX platforms
    import os as _px

PRINTED_DIR = 'printed'
REPORT_MAX = 100         # handles reported by one call, oldest first
COMPACT_AT = 256         # lines past which a write rewrites the file with what is still needed
KEEP_PRINTED = 86400.0   # a report relaybay never takes (the session is gone) is dropped after a day
KEEP_TAKEN = 86400.0     # a taken handle is remembered a day, against an offer that crossed its report
LOCK_WAIT = 2.0
MAX_BYTES = 256 * 1024   # read of a record at most (a compacted one holds at most KEEP_MAX lines)
KEEP_MAX = 2000          # handles a compaction keeps at most, the newest
KEEP_FILES = 2 * 86400.0  # a record untouched this long holds nothing needed (its process is gone)


def _session_id(payload):
    """The payload's session_id as it is written in the JSON (no JSON parser on the hot path:
    Claude Code writes session_id first, as a plain string)."""
    at = payload.find(b'"session_id"')
    if at < 0:
        return b''
    start = payload.find(b'"', payload.find(b':', at + 12) + 1)
    end = payload.find(b'"', start + 1)
    return payload[start + 1:end] if 0 <= start < end else b''


def file_for(spool, payload=None, session_id=None):
    """The file of this process: named by its proof (it outlives /clear), else by the hook
    session id (from the raw payload, or given)."""
    digest = proof.process_digest()
    if not digest:
        raw = session_id.encode('utf-8', 'surrogateescape') if session_id is not None else _session_id(payload or b'')
        if not raw:
            return None
        digest = proof.sha256_hex(b'relaybay-session:' + raw)
    folder = spool.rpartition('/')[0] or '.'
    return '%s/%s/%s' % (folder, PRINTED_DIR, digest)


def load(path):
    """{handle: (state, time)} from the file; empty when there is none."""
    return _parse(_read(path))


def _read(path):
    if not path:
        return b''
    try:
        fd = _px.open(path, _px.O_RDONLY | getattr(_px, 'O_NOFOLLOW', 0))
    except OSError:
        return b''
    try:
        if _px.fstat(fd).st_uid != _px.getuid():
            return b''
        return _px.read(fd, MAX_BYTES)
    except OSError:
        return b''
    finally:
        _px.close(fd)


def _parse(data):
    entries = {}
    for line in data.decode('ascii', 'replace').splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ('p', 'c'):
            try:
                entries[parts[0]] = (parts[1], float(parts[2]))
            except ValueError:
                pass
    return entries


def to_report(entries):
    """The handles printed and not yet taken by relaybay, oldest first."""
    waiting = sorted((at, handle) for handle, (state, at) in entries.items() if state == 'p')
    return [handle for _, handle in waiting[:REPORT_MAX]]


def report_headers(entries):
    report = to_report(entries)
    headers = ('X-Relaybay-Confirming: 1',)
    if report:
        headers += ('X-Relaybay-Printed: ' + ' '.join(report),)
    return headers


def handles(value):
    """The handles a header names ('C-12 M-40')."""
    return [h for h in (value or '').replace(',', ' ').split() if len(h) < 24 and h[:1].isupper() and h[1:2] == '-']


def repeats(entries, carried):
    """The handles of an answer printed already by this process."""
    return [h for h in carried if h in entries]


def show_once(path, carried, taken, show):
    """Show an answer carrying the handles `carried`, unless this process printed one of them
    already: `show(repeated)` prints the answer when `repeated` is empty. Several hook clients
    of one process run at once (parallel tool calls), and another may have printed an item of
    this answer since this one read the record: so the record is read again, the answer
    shown and what it carried recorded (or the repeated handles, to report again) under the
    record's lock, which the caller's exit gives back. Records what relaybay took too.
    Returns the repeated handles."""
    if not path:
        show([])
        return []
    try:
        lock = _lock(path)
    except Exception as exc:  # a full disk or a read-only home must not break the agent
        _trouble(path, exc)
        lock = None
    entries = load(path)
    repeated = repeats(entries, carried)
    show(repeated)
    _record_locked(path, entries, repeated or carried, taken, lock)
    return repeated


def record(path, entries, printed=(), taken=()):
    """Add what was printed (state p) and what relaybay took (c); never raises."""
    if not path or not (printed or [h for h in taken if entries.get(h, ('',))[0] != 'c']):
        return
    try:
        lock = _lock(path)
    except Exception as exc:
        _trouble(path, exc)
        return
    try:
        _record_locked(path, load(path), printed, taken, lock)
    finally:
        import os
        os.close(lock)


def _trouble(path, exc):
    from relaybay_hook.output import err
    err('could not record printed items in %s: %s' % (path, exc))


def _lock(path):
    """An fd holding the record's lock, waited for at most LOCK_WAIT (a stuck holder: the
    fd is given without it, since an append is whole anyway and better kept than lost)."""
    import fcntl
    import os

    from relaybay_hook import private
    private.folder(os.path.dirname(path))
    lock = private.open_file(path + '.lock', os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return lock
        except OSError:
            if time.monotonic() >= deadline:
                return lock
            time.sleep(0.005)


def _record_locked(path, entries, printed, taken, lock):
    now = time.time()
    changes = [(h, 'p') for h in printed] + [(h, 'c') for h in taken if entries.get(h, ('',))[0] != 'c']
    if not changes or lock is None:
        return
    try:
        _write(path, changes, now)
    except Exception as exc:
        _trouble(path, exc)


def _write(path, changes, now):
    """Append the changes, or rewrite the file with what is still needed past COMPACT_AT
    lines. The caller holds the lock."""
    import os

    from relaybay_hook import private
    lines = ['%s %s %.3f\n' % (h, state, now) for h, state in changes]
    data = _read(path)
    if not data:  # a new record: the records of processes long gone are removed
        private.prune(os.path.dirname(path), '', KEEP_FILES)
    if data.count(b'\n') + len(lines) > COMPACT_AT:
        current = _parse(data)
        for h, state in changes:
            current[h] = (state, now)
        kept = sorted((at, h, state) for h, (state, at) in current.items()
                      if now - at < (KEEP_PRINTED if state == 'p' else KEEP_TAKEN))[-KEEP_MAX:]
        private.replace(path, ''.join('%s %s %.3f\n' % (h, state, at) for at, h, state in kept).encode('ascii'))
    else:
        private.append(path, ''.join(lines).encode('ascii'))  # one write: an O_APPEND write lands whole
