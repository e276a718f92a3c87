"""An httpx2 transport whose requests a cancel can abort mid-flight, connection and all.

A blocked ``recv`` cannot be interrupted from another thread by closing its socket (the kernel
keeps the socket alive until the call returns, and the peer sees nothing). Shutting the socket
down can: the blocked read returns at once, the peer sees the connection end, and the pool
discards the connection. So every socket this transport opens is wrapped; a request made inside
:func:`abortable` registers the sockets it reads or writes with its :class:`CallSockets`, and
``CallSockets.abort()`` (from any thread) shuts them down.

A TCP connect in progress is not interruptible this way; the connection is shut as soon as the
connect returns (callers bound that with a connect timeout).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2  # httpx2's own connection layer (httpx2 pins its exact version)
import httpx2

_current = threading.local()


def _shut(sock: socket.socket) -> None:
    # Already closed or never connected: nothing left to end. The plain socket's shutdown, also
    # for TLS: the TLS layer's own would race the reader.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class CallSockets:
    """The sockets one call uses; :meth:`abort` shuts them down and refuses any new one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.aborted = False

    def add(self, sock: socket.socket) -> None:
        """Watch ``sock`` (shut at once when the call was already aborted)."""
        with self._lock:
            if not self.aborted:
                if not any(known is sock for known in self._sockets):
                    self._sockets.append(sock)
                return
        _shut(sock)

    def release(self) -> None:
        """Forget the sockets: the call is over and they may serve other calls now."""
        with self._lock:
            self._sockets = []

    def abort(self) -> None:
        """Shut down every socket of the call; later ones are shut as they appear."""
        with self._lock:
            self.aborted = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shut(sock)


@contextmanager
def abortable(sockets: CallSockets) -> Iterator[None]:
    """Requests made by this thread inside the block register their sockets with ``sockets``.

    On leaving the block they are released: a later abort leaves pooled connections alone.
    """
    previous = getattr(_current, "sockets", None)
    _current.sockets = sockets
    try:
        yield
    finally:
        _current.sockets = previous
        sockets.release()


def _note(stream: httpcore2.NetworkStream) -> None:
    sockets: CallSockets | None = getattr(_current, "sockets", None)
    if sockets is None:
        return
    sock = stream.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        sockets.add(sock)


class _WatchedStream(httpcore2.NetworkStream):
    """A network stream that tells the current call which socket it is using."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        _note(self._inner)
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _note(self._inner)
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        return _WatchedStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _WatchingBackend(httpcore2.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        stream = _WatchedStream(
            self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        )
        sockets: CallSockets | None = getattr(_current, "sockets", None)
        if sockets is not None and sockets.aborted:
            stream.close()
            raise httpcore2.ConnectError("the call was cancelled while connecting")
        _note(stream)
        return stream

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        return _WatchedStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AbortableTransport(httpx2.HTTPTransport):
    """httpx2's default transport (TLS verified, the default limits) with abortable sockets.

    ``ssl_context``: whom to trust instead of the system's certificate store.
    """

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__()
        limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
        # httpx2 offers no public way to pass a network backend to its connection pool.
        self._pool = httpcore2.ConnectionPool(
            ssl_context=ssl_context or httpx2.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_WatchingBackend(),
        )
