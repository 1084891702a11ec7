"""Whether a plain-http connection reached relaybay or another account's program.

While relaybay is down, any local account can listen on its address and would receive the
agents' token and every prompt, and could answer with text for the model. So before anything
is sent over plain http, the client asks the kernel who owns the other end of the connection
it holds: Linux's socket diagnostics (netlink NETLINK_SOCK_DIAG, one exact lookup of that
socket, ~20 µs), else the socket tables in /proc/net/tcp and tcp6 (a few ms: they list every
socket of the machine). The other end must belong to this account or to root (which owns
everything here already, and runs the port forwarders of containers). An end no table holds
is on another machine (use https there); a loopback end whose owner cannot be read is
refused, as is one of another account. Off Linux nothing is checked.

Reads only what an interpreter started with -S has loaded, plus `_socket` (which conn.py
imports anyway).
"""
import sys

import _socket

try:
    import posix as _px
except ImportError:  # pragma: no cover - non-POSIX platforms
    _px = None

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
ENOENT = 2
IPPROTO_TCP = 6
ALL_STATES = 0xfff
TRUSTED_UIDS = (0,)  # root, besides this account


class NotRelaybay(Exception):
    """The other end belongs to another account, or its owner cannot be read for a loopback
    address: nothing may be sent."""


class _Unknown(Exception):
    """The socket tables could not be read."""


def _address(family, host):
    raw = _socket.inet_pton(family, host.partition('%')[0])
    return raw + b'\0' * (16 - len(raw))


def _owner_by_netlink(family, peer, me):
    """The uid owning the other end (None: no socket of this machine is that end)."""
    sockid = (peer[1].to_bytes(2, 'big') + me[1].to_bytes(2, 'big') + _address(family, peer[0])
              + _address(family, me[0]) + b'\0\0\0\0' + b'\xff' * 8)
    body = bytes((family, IPPROTO_TCP, 0, 0)) + ALL_STATES.to_bytes(4, 'little') + sockid
    head = ((16 + len(body)).to_bytes(4, 'little') + SOCK_DIAG_BY_FAMILY.to_bytes(2, 'little')
            + NLM_F_REQUEST.to_bytes(2, 'little') + (1).to_bytes(4, 'little') + b'\0\0\0\0')
    try:
        nl = _socket.socket(16, _socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)  # AF_NETLINK
    except (OSError, AttributeError) as exc:
        raise _Unknown(str(exc))
    try:
        nl.settimeout(1.0)
        nl.sendto(head + body, (0, 0))
        data = nl.recv(65536)
    except OSError as exc:
        raise _Unknown(str(exc))
    finally:
        nl.close()
    if len(data) < 20:
        raise _Unknown('short netlink answer')
    if int.from_bytes(data[4:6], 'little') == NLMSG_ERROR:
        code = -int.from_bytes(data[16:20], 'little', signed=True)
        if code == ENOENT:
            return None
        raise _Unknown('netlink error %d' % code)
    if len(data) < 16 + 68:
        raise _Unknown('short netlink answer')
    return int.from_bytes(data[16 + 64:16 + 68], 'little')


def _proc_hex(family, host, port):
    raw = _address(family, host)[:4 if family == _socket.AF_INET else 16]
    words = [raw[i:i + 4] for i in range(0, len(raw), 4)]
    if sys.byteorder == 'little':
        words = [w[::-1] for w in words]
    return (b''.join(words).hex() + ':%04x' % port).upper()


def _owner_by_proc(family, peer, me):
    """The same from /proc/net/tcp (tcp6): the line whose local end is the peer and whose
    remote end is this socket."""
    local, remote = _proc_hex(family, peer[0], peer[1]), _proc_hex(family, me[0], me[1])
    try:
        with open('/proc/net/tcp' if family == _socket.AF_INET else '/proc/net/tcp6', 'rb') as f:
            lines = f.read().decode('ascii', 'replace').splitlines()[1:]
    except OSError as exc:
        raise _Unknown(str(exc))
    for line in lines:
        fields = line.split()
        if len(fields) > 7 and fields[1] == local and fields[2] == remote:
            return int(fields[7])
    return None


def _loopback(family, host):
    if family == _socket.AF_INET:
        return host.startswith('127.')
    return host == '::1' or host.startswith('::ffff:127.')


def owner(sock):
    """The uid owning the other end of a connected TCP socket; None when it is not on this
    machine. Raises _Unknown when neither table can be read."""
    family = sock.family
    peer, me = sock.getpeername(), sock.getsockname()
    try:
        return _owner_by_netlink(family, peer, me)
    except _Unknown:
        return _owner_by_proc(family, peer, me)


def check(sock):
    """Raise NotRelaybay unless the other end of `sock` (a connected TCP socket) is this
    account's or root's, or on another machine."""
    if not sys.platform.startswith('linux') or _px is None:
        return
    if sock.family not in (_socket.AF_INET, _socket.AF_INET6):
        return
    host, port = sock.getpeername()[:2]
    try:
        uid = owner(sock)
    except (_Unknown, OSError, ValueError) as exc:
        if _loopback(sock.family, host):
            raise NotRelaybay('the owner of the listener on %s port %d cannot be read (%s)' % (host, port, exc))
        return
    if uid is not None and uid != _px.getuid() and uid not in TRUSTED_UIDS:
        raise NotRelaybay('the listener on %s port %d belongs to another account (uid %d)' % (host, port, uid))
