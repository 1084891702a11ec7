#!/usr/bin/env python3
"""relaybay-hook: the command-hook client for relaybay (stdlib only, no Django).

Usage (from Claude Code hook settings):
    python3 -S /abs/path/relaybay_hook.py          # any hook event (event mode)
    python3 -S /abs/path/relaybay_hook.py wait     # Stop hook with "asyncRewake": true

Event mode reads the hook payload on stdin, POSTs it to {RELAYBAY_URL}/api/hooks
and prints the answer JSON. When relaybay cannot be reached the event is appended
to a spool file and the hook exits 0 at once with no output; the next call that
reaches relaybay replays the spool first, in order, marked as replay.

Wait mode long-polls {RELAYBAY_URL}/api/hooks/wait for the session and exits 2
with the delivered text on stderr (which wakes the model), otherwise exits 0.

Environment:
    RELAYBAY_URL      base URL (default http://127.0.0.1:8000)
    RELAYBAY_TOKEN    bearer token
    RELAYBAY_TOKEN_FILE  a file holding the token, read when RELAYBAY_TOKEN is unset
    RELAYBAY_SPOOL    spool file (default ~/.relaybay/spool.jsonl)
    RELAYBAY_SESSION  terminal-session name, sent with SessionStart
    RELAYBAY_WAIT     wake-up mode total wait in seconds (default 600)
    RELAYBAY_TIMEOUT  seconds for one event post (default 10)
    RELAYBAY_CAFILE   CA bundle for an https RELAYBAY_URL (optional)

Startup speed matters (it runs for every hook event), so the hot path uses only
modules an interpreter started with -S has already loaded plus the `_socket`
extension: no os, socket, json, re, urllib, http.client or ssl; it speaks HTTP/1.1
itself. The rare paths (spool, replay, error details, wait mode, https) import what
they need lazily, and their code is compiled only when first used (see `rare`).
The hook never raises and exits 0, except 2 for a wake-up in wait mode.
"""
import sys
import time

try:  # the C module behind `os`; importing `os` itself costs ~1 ms
    import posix as _px

    def _getenv(name, default=None):
        v = _px.environ.get(name.encode())
        if v is None:
            return default
        return v.decode('utf-8', 'surrogateescape')
except ImportError:  # pragma: no cover - non-POSIX platforms
    import os as _px

    def _getenv(name, default=None):
        return _px.environ.get(name, default)

import _socket

DEFAULT_URL = 'http://127.0.0.1:8000'
DEFAULT_SPOOL = '~/.relaybay/spool.jsonl'
HOOKS_PATH = '/api/hooks'
WAIT_PATH = '/api/hooks/wait'
LOCK_WAIT = 5.0        # seconds to wait for the spool lock before giving up
REPLAY_BUDGET = 3.0    # seconds one call may spend replaying before deferring the rest
WAIT_POLL_MAX = 50     # seconds per long poll
MIN_POLL_INTERVAL = 1.0  # never re-poll faster than this (guards a server that answers at once)


class Unreachable(Exception):
    """No HTTP status line was received: relaybay is down, unknown or too slow."""


# --------------------------------------------------------------------------- config

def _float_env(name, default):
    try:
        v = float(_getenv(name) or default)
    except ValueError:
        return float(default)
    return v if v == v and abs(v) != float('inf') else float(default)  # NaN, inf -> default


def _parse_url(url):
    """Split a base URL into (scheme, host, port, host_header, path_prefix)."""
    url = (url or DEFAULT_URL).strip()
    scheme, sep, rest = url.partition('://')
    if not sep:
        scheme, rest = 'http', url
    scheme = scheme.lower()
    for ch in '?#':
        rest = rest.partition(ch)[0]
    hostport, slash, path = rest.partition('/')
    hostport = hostport.rpartition('@')[2]
    prefix = ('/' + path).rstrip('/') if slash else ''
    if hostport.startswith('['):
        host, _, after = hostport[1:].partition(']')
        port = after[1:] if after.startswith(':') else ''
    else:
        host, _, port = hostport.partition(':')
    port = int(port) if port else (443 if scheme == 'https' else 80)
    return scheme, host or '127.0.0.1', port, hostport or host, prefix


def _auth_headers():
    token = _getenv('RELAYBAY_TOKEN') or _token_from_file()
    if token:
        return ['Authorization: Bearer ' + _clean(token)]
    return []


def _token_from_file():
    # claude_config names a file instead of writing the token into the hook command: Claude
    # Code repeats a wake-up hook's command line to the model.
    path = _getenv('RELAYBAY_TOKEN_FILE')
    if not path:
        return None
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except OSError:
        return None


def _clean(value):
    return str(value).replace('\r', '').replace('\n', '').strip()


# --------------------------------------------------------------------------- HTTP

def _connect(scheme, host, port, deadline):
    if scheme == 'https':
        return rare.connect_tls(host, port, deadline)
    try:
        bhost = host.encode('ascii')  # a str host makes _socket import the idna codec (+re)
    except UnicodeError:
        bhost = host.encode('idna')
    last = None
    for family, kind, proto, _, addr in _socket.getaddrinfo(bhost, port, 0, _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.connect(addr)
            return sock
        except OSError as exc:
            last = exc
            sock.close()
    raise last or OSError('no address for %s' % host)


def _dechunk(data):
    """Decode a chunked body; None while incomplete. Raises ValueError if malformed."""
    out = bytearray()
    pos = 0
    while True:
        eol = data.find(b'\r\n', pos)
        if eol < 0:
            return None
        size = int(bytes(data[pos:eol]).split(b';', 1)[0].strip(), 16)
        pos = eol + 2
        if size == 0:
            if data[pos:pos + 2] == b'\r\n' or data.find(b'\r\n\r\n', pos) >= 0:
                return bytes(out)
            return None
        if len(data) < pos + size + 2:
            return None
        out += data[pos:pos + size]
        pos += size + 2


def _body_if_complete(headers, buf, eof):
    te = headers.get(b'transfer-encoding', b'').lower()
    if b'chunked' in te:
        return _dechunk(buf)
    length = headers.get(b'content-length')
    if length is not None:
        n = int(length)
        return bytes(buf[:n]) if len(buf) >= n else None
    return bytes(buf) if eof else None


def _read_response(sock, deadline):
    """Return (status, body); body is None when the answer was cut short.

    Raises Unreachable if no status line arrived.
    """
    buf = bytearray()
    status = None
    headers = None
    eof = False
    while True:
        if status is None:
            eol = buf.find(b'\r\n')
            if eol >= 0:
                parts = bytes(buf[:eol]).split(None, 2)
                if len(parts) < 2 or not parts[0].startswith(b'HTTP/'):
                    raise Unreachable('not an HTTP answer')
                try:
                    status = int(parts[1])
                except ValueError:
                    raise Unreachable('bad status line')
        if status is not None and headers is None:
            end = buf.find(b'\r\n\r\n')
            if end >= 0:
                headers = {}
                for line in bytes(buf[:end]).split(b'\r\n')[1:]:
                    name, _, value = line.partition(b':')
                    headers[name.strip().lower()] = value.strip()
                del buf[:end + 4]
                if 100 <= status < 200:  # interim answer: read on
                    status = headers = None
                    continue
        if headers is not None:
            try:
                body = _body_if_complete(headers, buf, eof)
            except ValueError:
                return status, None
            if body is not None:
                return status, body
        if eof:
            if status is None:
                raise Unreachable('connection closed before a status line')
            return status, None
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise OSError('timed out')
            sock.settimeout(remaining)
            chunk = sock.recv(65536)
        except OSError as exc:
            if status is None:
                raise Unreachable(str(exc) or exc.__class__.__name__)
            return status, None
        if chunk:
            buf += chunk
        else:
            eof = True


def http_request(method, path, body=None, headers=(), timeout=10.0, url=None):
    """One HTTP/1.1 exchange (Connection: close). Returns (status, body or None)."""
    scheme, host, port, host_header, prefix = _parse_url(url or _getenv('RELAYBAY_URL'))
    deadline = time.monotonic() + timeout
    lines = [
        '%s %s%s HTTP/1.1' % (method, prefix, path),
        'Host: ' + host_header,
        'User-Agent: relaybay-hook/1',
        'Accept: application/json',
        'Connection: close',
    ]
    lines.extend(_auth_headers())
    lines.extend(headers)
    if body is not None:
        lines.append('Content-Type: application/json')
        lines.append('Content-Length: %d' % len(body))
    request = ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1', 'replace')
    if body:
        request += body
    try:
        sock = _connect(scheme, host, port, deadline)
    except (OSError, ValueError) as exc:
        raise Unreachable(str(exc) or exc.__class__.__name__)
    try:
        send_error = None
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(request)
        except OSError as exc:  # the server may have answered early (e.g. 413) and closed
            send_error = exc
        try:
            return _read_response(sock, deadline)
        except Unreachable:
            if send_error is not None:
                raise Unreachable(str(send_error) or send_error.__class__.__name__)
            raise
    finally:
        try:
            sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------- output

def _err(message):
    try:
        sys.stderr.buffer.write(('relaybay: %s\n' % message).encode('utf-8', 'replace'))
        sys.stderr.flush()
    except Exception:
        pass


def _out(data):
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except Exception:
        pass


def _unavailable(status):
    # a proxy answering for a relaybay that is down: treat like "cannot be reached"
    return status in (502, 503, 504)


# --------------------------------------------------------------------------- event mode

def _spool_path():
    path = _getenv('RELAYBAY_SPOOL') or DEFAULT_SPOOL
    if path.startswith('~'):
        home = _getenv('HOME')
        if home and (path == '~' or path.startswith('~/')):
            path = home.rstrip('/') + path[1:]
        else:
            import os.path
            path = os.path.expanduser(path)
    return path


def _spool_pending(path):
    try:
        return _px.stat(path).st_size > 0
    except OSError:
        return False


def event_mode():
    payload = sys.stdin.buffer.read()
    if not payload.strip():
        return 0
    name = _getenv('RELAYBAY_SESSION')
    if name and b'SessionStart' in payload:
        payload = rare.with_session_name(payload, name)
    timeout = max(_float_env('RELAYBAY_TIMEOUT', 10), 0.1)
    spool = _spool_path()
    try:
        if _spool_pending(spool) and rare.replay_spool(spool, payload, timeout):
            return 0
        try:
            status, body = http_request('POST', HOOKS_PATH, payload, (), timeout)
        except Unreachable:
            status, body = None, None
        if status is None or _unavailable(status):
            rare.spool_event(spool, payload)
            return 0
    except Exception as exc:  # spool trouble (disk full, permissions...): never break the agent
        _err('spool error: %s' % exc)
        return 0
    if 200 <= status < 300:
        if body is None:
            _err('%d answer cut short' % status)
        elif body.strip():
            if body.lstrip()[:1] == b'{':
                _out(body)
            else:
                _err('%d answer is not a JSON object' % status)
        return 0
    _err(rare.error_text(status, body))
    return 0


def main(argv):
    try:
        if len(argv) > 1 and argv[1] == 'wait':
            return rare.wait_mode()
        return event_mode()
    except Exception as exc:
        _err('internal error: %s: %s' % (exc.__class__.__name__, exc))
        return 0


# --------------------------------------------------------------------------- rare paths
# A script run as __main__ is compiled from source on every start (it gets no .pyc), and
# compiling the code below would cost ~1.5 ms per hook on CPython 3.13 (a fifth of a bare
# interpreter start) although only spooling, replay, error reporting, https and wait mode
# need it. So it is kept as text and compiled into this module's globals on first use,
# through `rare.<name>`. Line numbers in its tracebacks match this file.

_RARE = r'''
def connect_tls(host, port, deadline):
    import socket
    import ssl
    raw = socket.create_connection((host, port), max(deadline - time.monotonic(), 0.001))
    ctx = ssl.create_default_context()
    cafile = _getenv('RELAYBAY_CAFILE')
    if cafile:
        ctx.load_verify_locations(cafile)
    return ctx.wrap_socket(raw, server_hostname=host)


def error_text(status, body):
    """'<status> <detail>' from a refusal: the JSON 'detail' or 'error', else a short text."""
    detail = ''
    if body:
        import json
        text = body.decode('utf-8', 'replace')
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            for key in ('detail', 'error'):
                if obj.get(key):
                    detail = obj[key]
                    break
        elif isinstance(obj, str):
            detail = obj
        elif obj is None:
            if text.lstrip().startswith('<'):  # an HTML error page: its title says enough
                start = text.lower().find('<title>')
                end = text.lower().find('</title>')
                detail = text[start + 7:end] if 0 <= start < end else ''
            else:
                detail = text
        if not isinstance(detail, str):
            detail = json.dumps(detail)
    detail = ' '.join(detail.split())[:300]
    return ('%d %s' % (status, detail)).rstrip()


def _spool_line(payload):
    import json
    now = time.time()
    stamp = time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(now))
    stamp += '.%06d+00:00' % int((now % 1) * 1000000)
    entry = {'spooled_at': stamp, 'payload': payload.decode('utf-8', 'surrogateescape')}
    return (json.dumps(entry) + '\n').encode('ascii')


def _ensure_dir(path):
    import os
    parent = os.path.dirname(os.path.abspath(path))
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, 0o700, exist_ok=True)


class _SpoolLock(object):
    """Exclusive flock on <spool>.lock, waited for at most LOCK_WAIT seconds."""

    def __init__(self, spool):
        self.path = spool + '.lock'
        self.fd = None

    def acquire(self, wait=LOCK_WAIT):
        import fcntl
        import os
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
            import os
            try:
                os.close(self.fd)  # closing drops the flock
            except OSError:
                pass
            self.fd = None


def _append_lines(path, lines):
    import os
    _ensure_dir(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, b''.join(lines))  # one write: an O_APPEND write lands whole
    finally:
        os.close(fd)


def _rewrite(path, lines):
    """Replace the spool with `lines` atomically (temp file + rename); caller holds the lock."""
    import os
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
    import json
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
                spooled_at = _clean(entry.get('spooled_at') or '')
            except (ValueError, KeyError, TypeError, AttributeError):
                _err('dropping an unreadable spool line')
                i += 1
                continue
            headers = ['X-Relaybay-Replay: 1']
            if spooled_at:
                headers.append('X-Relaybay-Spooled-At: ' + spooled_at)
            try:
                status, answer = http_request('POST', HOOKS_PATH, body, headers, timeout)
            except Unreachable:
                status, answer = None, None
            if status is None or _unavailable(status):
                _rewrite(path, lines[i:] + [_spool_line(payload)])
                return True
            if 200 <= status < 300:
                i += 1
            elif 400 <= status < 500:
                _err('replay refused, dropped: ' + error_text(status, answer))
                i += 1
            else:
                # reachable but failing on this entry: keep it (and the rest) for a later
                # call, and do not hold the live event hostage behind it
                _err('replay failed, kept: ' + error_text(status, answer))
                _rewrite(path, lines[i:])
                return False
        _rewrite(path, [])
        return False
    finally:
        lock.release()


def with_session_name(payload, name):
    """Add relaybay_session to a SessionStart payload; anything else passes unchanged."""
    import json
    try:
        obj = json.loads(payload.decode('utf-8'))
    except ValueError:
        return payload
    if not isinstance(obj, dict) or obj.get('hook_event_name') != 'SessionStart':
        return payload
    obj['relaybay_session'] = name
    return json.dumps(obj, ensure_ascii=False).encode('utf-8')


def _quote(value):
    safe = b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~'
    return ''.join(chr(b) if b in safe else '%%%02X' % b for b in value.encode('utf-8'))


def wait_mode():
    import json
    try:
        obj = json.loads(sys.stdin.buffer.read().decode('utf-8'))
    except ValueError:
        return 0
    session_id = obj.get('session_id') if isinstance(obj, dict) else None
    if not session_id or not isinstance(session_id, str):
        return 0
    deadline = time.monotonic() + _float_env('RELAYBAY_WAIT', 600)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return 0
        poll = min(WAIT_POLL_MAX, int(remaining) + (remaining % 1 > 0))  # ceil, >= 1
        path = '%s?session_id=%s&timeout=%d' % (WAIT_PATH, _quote(session_id), poll)
        started = time.monotonic()
        try:
            status, body = http_request('GET', path, None, (), poll + 10)
        except Unreachable:
            return 0
        if status is None or not 200 <= status < 300 or not body:
            return 0
        try:
            answer = json.loads(body.decode('utf-8'))
        except ValueError:
            return 0
        state = answer.get('status') if isinstance(answer, dict) else None
        if state == 'delivered':
            text = answer.get('text')
            if not isinstance(text, str) or not text.strip():
                return 0
            try:
                sys.stderr.buffer.write(text.encode('utf-8', 'replace'))
                sys.stderr.flush()
            except Exception:
                return 0
            return 2
        if state != 'timeout':
            return 0  # replaced by a newer waiter, or anything unexpected
        pause = MIN_POLL_INTERVAL - (time.monotonic() - started)
        if pause > 0:
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
'''


class _Rare(object):
    """`rare.name` compiles the rare-path code on first access."""

    def __getattr__(self, name):
        g = globals()
        if '_rare_loaded' not in g:
            offset = 0
            try:
                with open(__file__, 'rb') as f:
                    offset = f.read().split(b"\n_RARE = r'''", 1)[0].count(b"\n") + 1
            except (OSError, NameError):
                pass
            code = compile("\n" * offset + _RARE, g.get('__file__', 'relaybay_hook.py'), 'exec')
            exec(code, g)
            g['_rare_loaded'] = True
        try:
            return g[name]
        except KeyError:
            raise AttributeError(name)


rare = _Rare()


if __name__ == '__main__':
    sys.exit(main(sys.argv))
