"""What every daemon answer and request goes through besides auth (spec 10, issue 27).

- **The body cap.** No request body over :data:`MAX_BODY_BYTES` is ever held in memory: a
  declared ``Content-Length`` over it is refused before a byte is read, and a body without one
  is counted while it streams and refused as soon as it passes the cap (413
  ``body_too_large``). Routes read bodies through :func:`read_capped`.
- **Security headers** on every answer: a Content-Security-Policy that lets the page load only
  its own scripts, styles and event stream (no inline scripts, no plug-ins, no framing:
  ``frame-ancestors 'none'``), ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``
  for older browsers and ``Referrer-Policy: no-referrer`` (the one-time sign-in link never
  leaves in a Referer). No ``'unsafe-eval'`` and no ``'unsafe-inline'``: the page has no
  inline script, style or ``style=""`` attribute, and htmx runs with ``allowEval: false``.
- **The back-off** for wrong credentials (:class:`FailureBackoff`).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Final

from starlette.types import Message, Scope, Send

from oharness.daemon.errors import DaemonApiError

#: The largest request body the daemon reads (a note's text is at most 64 KiB of it).
MAX_BODY_BYTES: Final = 1024 * 1024
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Final[tuple[tuple[bytes, bytes], ...]] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode("ascii")),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)


def body_too_large(limit: int = MAX_BODY_BYTES) -> DaemonApiError:
    """413 ``body_too_large``: what a body over ``limit`` bytes is answered."""
    return DaemonApiError(
        413,
        "body_too_large",
        f"the request body is over {limit} bytes, the daemon's limit; send less "
        "(a note's text is at most 64 KiB)",
    )


def declared_length(scope: Scope) -> int | None:
    """The request's ``Content-Length`` (None when absent or not a number)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def read_capped(chunks: AsyncIterator[bytes], limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body of ``chunks``, refused (413) as soon as it passes ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise body_too_large(limit)
        parts.append(chunk)
    return b"".join(parts)


def with_security_headers(send: Send) -> Send:
    """``send``, adding :data:`SECURITY_HEADERS` to the response start (a route's own win)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            present = {name.lower() for name, _ in headers}
            headers += [(name, value) for name, value in SECURITY_HEADERS if name not in present]
            message = {**message, "headers": headers}
        await send(message)

    return sending


@dataclass
class _Record:
    failures: deque[float] = field(default_factory=deque)
    level: int = 0
    until: float = 0.0


class FailureBackoff:
    """Wrong credentials, slowed per client address.

    The first :attr:`free` wrong tries within :attr:`window` seconds are answered 401 at once.
    Each one after that doubles the client's back-off (1 s, 2 s, 4 s, … at most
    :attr:`longest`) and is answered 429 ``too_many_attempts`` with ``Retry-After``, after a
    pause of up to :attr:`tarpit` seconds, so a client guessing in a loop gets its answers
    ever more slowly. A client with no wrong try for a whole window starts afresh. A right
    credential is never refused: on loopback every local process shares one address, and a
    misconfigured script must not lock the page and the hooks out.
    """

    free: int = 5
    window: float = 60.0
    first: float = 1.0
    longest: float = 60.0
    tarpit: float = 1.0
    #: Client addresses remembered at most (the oldest is forgotten first).
    max_clients: int = 4096

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def failed(self, client: str) -> int | None:
        """Record a wrong try by ``client``: None while it is still free, else the seconds the
        client should wait (its back-off, which this try just doubled)."""
        now = self._clock()
        with self._lock:
            record = self._records.pop(client, None) or _Record()
            self._records[client] = record  # most recent last
            while record.failures and now - record.failures[0] >= self.window:
                record.failures.popleft()
            if not record.failures:
                record.level = 0
            record.failures.append(now)
            if len(self._records) > self.max_clients:
                del self._records[next(iter(self._records))]
            if len(record.failures) <= self.free:
                return None
            record.level += 1
            wait = min(math.ldexp(self.first, min(record.level - 1, 30)), self.longest)
            record.until = now + wait
            return max(1, math.ceil(wait))

    def pause(self, wait: int) -> float:
        """How long to hold the answer to a try that must wait ``wait`` seconds."""
        return min(float(wait), self.tarpit)


def too_many_attempts(wait: int) -> DaemonApiError:
    """429 ``too_many_attempts`` for a client in back-off."""
    return DaemonApiError(
        429,
        "too_many_attempts",
        f"too many wrong credentials from this address: wait {wait} s, then send the token "
        "from $OHARNESS_HOME/daemon-token",
        retry_after=wait,
    )
