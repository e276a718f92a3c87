"""One kept-alive HTTP/1.1 connection for the daemon's per-prompt JSON calls (the recall).

A harness hook asks the daemon for the ``<recalled-memory>`` block on every prompt and waits
for it. A general HTTP client spends about 0.7 ms of CPU per request on this machine's kind
of hardware (URL merging, header models, the pool, the event hooks) — as much as a third of
the whole answer, on the same cores the daemon needs. The standard library's
:class:`http.client.HTTPConnection`, kept open between calls, spends about 0.16 ms.

:class:`JsonConnection` sends one request at a time (a lock), reconnects when the daemon
closed the connection while it was idle (the request is sent once more, on a new connection,
only then: a request the daemon never received) and is closed with the client.
"""

from __future__ import annotations

import http.client
import threading
from urllib.parse import urlsplit

from oharness.errors import OHarnessError


class JsonConnection:
    """POSTs of JSON bodies to one ``http://host:port``, over a connection kept open."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise OHarnessError(f"{url} is not an http:// address; use the general client")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._timeout = timeout
        self._headers = {**headers, "Content-Type": "application/json"}
        self._connection: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """The status and body of the answer; ``OSError`` or ``http.client.HTTPException``
        when the daemon cannot be reached or answers garbage."""
        with self._lock:
            reused = self._connection is not None
            try:
                return self._exchange(path, body)
            except (ConnectionError, http.client.BadStatusLine):
                self._drop()
                if not reused:
                    raise
            except (OSError, http.client.HTTPException):  # a timeout, garbage: not again
                self._drop()
                raise
            # The kept-alive connection was closed by the daemon while idle: a new one.
            try:
                return self._exchange(path, body)
            except (OSError, http.client.HTTPException):
                self._drop()
                raise

    def _exchange(self, path: str, body: bytes) -> tuple[int, bytes]:
        connection = self._connection
        if connection is None:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            self._connection = connection
        connection.request("POST", path, body=body, headers=self._headers)
        response = connection.getresponse()
        data = response.read()
        if response.will_close:
            self._drop()
        return response.status, data

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def close(self) -> None:
        """Close the connection (a later :meth:`post` opens a new one)."""
        with self._lock:
            self._drop()
