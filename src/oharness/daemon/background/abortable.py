"""An HTTP client whose requests in flight can be aborted from another thread.

Closing an ``httpx2.Client`` from another thread does not wake a thread blocked reading a
response: the socket must be shut down. :class:`AbortableHttp` hands httpx2's transport a
connection pool whose network backend remembers every socket it opened, and :meth:`abort`
shuts them all down, so a request already sent fails at once (``cancel sync`` means now, not
when the server answers). httpx2 exposes no option for a network backend; the pool is set on
its transport (checked at construction, so a changed httpx2 fails loudly, never silently).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2


class _RecordingBackend(httpcore2.SyncBackend):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        stream = super().connect_tcp(host, port, timeout, local_address, socket_options)
        sock = stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets = [s for s in self._sockets if s.fileno() != -1]
                self._sockets.append(sock)
        return stream

    def abort(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class AbortableHttp:
    """Makes clients (one at a time) whose connections :meth:`abort` cuts."""

    def __init__(self, *, timeout: httpx2.Timeout | None = None) -> None:
        self._timeout = timeout or httpx2.Timeout(60.0, connect=10.0)
        self._backend = _RecordingBackend()

    def client(self) -> httpx2.Client:
        transport = httpx2.HTTPTransport()
        if not isinstance(getattr(transport, "_pool", None), httpcore2.ConnectionPool):
            raise RuntimeError("httpx2's transport changed: requests could not be aborted")
        transport._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(), network_backend=self._backend
        )
        return httpx2.Client(transport=transport, timeout=self._timeout)

    def abort(self) -> None:
        """Fail every request in flight now (their connections are shut down)."""
        self._backend.abort()
