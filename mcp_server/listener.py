"""HTTP clients that send nothing to a listener of another account on relaybay's address: the
connection's other end is checked before its first byte (relaybay_hook/peer.py), as the hook
client does. For the stdio MCP server's calls to relaybay's API."""

import httpcore2
import httpx2

from relaybay_hook.peer import NotRelaybay, check

__all__ = ["NotRelaybay", "async_transport", "sync_transport"]


class _Checked(httpcore2.AsyncNetworkBackend):
    def __init__(self):
        self.backend = httpcore2.AnyIOBackend()

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = await self.backend.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        try:
            check(stream.get_extra_info("socket"))
        except NotRelaybay:
            await stream.aclose()
            raise
        return stream

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return await self.backend.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)

    async def sleep(self, seconds):
        await self.backend.sleep(seconds)


class _SyncChecked(httpcore2.NetworkBackend):
    def __init__(self):
        self.backend = httpcore2.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = self.backend.connect_tcp(host, port, timeout=timeout, local_address=local_address, socket_options=socket_options)
        try:
            check(stream.get_extra_info("socket"))
        except NotRelaybay:
            stream.close()
            raise
        return stream

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return self.backend.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)

    def sleep(self, seconds):
        self.backend.sleep(seconds)


class _AsyncTransport(httpx2.AsyncHTTPTransport):
    def __init__(self, verify):
        super().__init__(verify=verify, trust_env=False)
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(verify=verify, trust_env=False), network_backend=_Checked()
        )


class _SyncTransport(httpx2.HTTPTransport):
    def __init__(self, verify):
        super().__init__(verify=verify, trust_env=False)
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(verify=verify, trust_env=False), network_backend=_SyncChecked()
        )


def async_transport(verify=True):
    return _AsyncTransport(verify)


def sync_transport(verify=True):
    return _SyncTransport(verify)
