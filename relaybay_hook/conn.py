"""One HTTP/1.1 exchange with relaybay over the `_socket` extension (no socket, ssl or http
imports on the plain-http path)."""
import time

import _socket

from relaybay_hook import env, peer

HOOKS_PATH = '/api/hooks'


class Unreachable(Exception):
    """No HTTP status line was received: relaybay is down, unknown or too slow."""


class NotRelaybay(Unreachable):
    """Another account's program listens on relaybay's address (relaybay_hook/peer.py): nothing
    was sent to it, and nothing it says is read."""


class CertificateRefused(Unreachable):
    """relaybay's https certificate does not verify against the trusted CAs (RELAYBAY_CAFILE, or
    the system's): nothing was sent."""


def unavailable(status):
    # a proxy answering for a relaybay that is down: treat like "cannot be reached"
    return status in (502, 503, 504)


def _parse_url(url):
    """Split a base URL into (scheme, host, port, host_header, path_prefix)."""
    url = (url or env.DEFAULT_URL).strip()
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


def _connect(scheme, host, port, deadline):
    if scheme == 'https':
        return _connect_tls(host, port, deadline)
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
        except OSError as exc:
            last = exc
            sock.close()
            continue
        try:
            peer.check(sock)
        except peer.NotRelaybay as exc:
            sock.close()
            raise NotRelaybay(str(exc))
        return sock
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


def _read_response(sock, deadline, answer_headers=None):
    """Return (status, body); body is None when the answer was cut short. The answer's
    headers go into `answer_headers` (lowercased names), when given.

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
                if answer_headers is not None:
                    for name, value in headers.items():
                        answer_headers[name.decode('latin-1')] = value.decode('latin-1')
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


def http_request(method, path, body=None, headers=(), timeout=10.0, url=None, answer_headers=None, token=None):
    """One HTTP/1.1 exchange (Connection: close). Returns (status, body or None); the
    answer's headers go into the dict `answer_headers`, when given. Over plain http nothing is
    sent before the listener is known to be relaybay's account's (NotRelaybay)."""
    scheme, host, port, host_header, prefix = _parse_url(url or env.base_url())
    deadline = time.monotonic() + timeout
    lines = [
        '%s %s%s HTTP/1.1' % (method, prefix, path),
        'Host: ' + host_header,
        'User-Agent: relaybay-hook/1',
        'Accept: application/json',
        'Connection: close',
    ]
    token = token or env.token()
    if token:
        lines.append('Authorization: Bearer ' + env.clean(token))
    lines.extend(headers)
    if body is not None:
        lines.append('Content-Type: application/json')
        lines.append('Content-Length: %d' % len(body))
    request = ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1', 'replace')
    if body:
        request += body
    try:
        sock = _connect(scheme, host, port, deadline)
    except (NotRelaybay, CertificateRefused):
        raise
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
            return _read_response(sock, deadline, answer_headers)
        except Unreachable:
            if send_error is not None:
                raise Unreachable(str(send_error) or send_error.__class__.__name__)
            raise
    finally:
        try:
            sock.close()
        except OSError:
            pass


def _connect_tls(host, port, deadline):
    import socket
    import ssl
    raw = socket.create_connection((host, port), max(deadline - time.monotonic(), 0.001))
    ctx = ssl.create_default_context()
    cafile = env.setting('RELAYBAY_CAFILE')
    try:
        if cafile:
            ctx.load_verify_locations(cafile)
        return ctx.wrap_socket(raw, server_hostname=host)
    except (ssl.SSLCertVerificationError, FileNotFoundError) as exc:
        raw.close()
        raise CertificateRefused(
            'relaybay at %s:%s is not trusted: %s (trusted: %s). Set RELAYBAY_CAFILE to the CA '
            'certificate relaybay is served with; events are kept until it verifies.'
            % (host, port, getattr(exc, 'verify_message', None) or exc, cafile or "the system's CAs"))


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
