"""Who may talk to the daemon (spec 10): the bearer token, the page's cookie, Host and Origin.

- The token lives in ``$OHARNESS_HOME/daemon-token`` (mode 0600), generated at first start
  and kept across restarts; every request carries ``Authorization: Bearer <token>``.
- A browser cannot set that header on an ``EventSource``: the one-time page URL
  (``/auth?code=…``, printed at start, valid once) sets an HttpOnly, SameSite=Strict cookie
  holding a per-start session secret. A state-changing request (anything but GET, HEAD,
  OPTIONS) authenticated by the cookie also needs the ``X-CSRF-Token`` header, whose value
  the page gets from ``GET /auth/csrf`` (itself only readable with the cookie, and never
  cross-origin: there are no CORS headers).
- The Host header must name a loopback address or ``localhost`` (or the host the daemon was
  told to bind), which defeats DNS rebinding. A request carrying an ``Origin`` must come from
  the daemon's own origin: an allowed host *and* the port the request was sent to, so a page
  served by another program on ``localhost`` is refused like any other site.
- Wrong bearer tokens, CSRF tokens and sign-in codes are slowed per client address
  (:class:`~oharness.daemon.guards.FailureBackoff`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from oharness.daemon.errors import DaemonApiError
from oharness.daemon.guards import FailureBackoff, too_many_attempts
from oharness.errors import StorageError
from oharness.fsio import atomic_write

TOKEN_FILE: Final = "daemon-token"
COOKIE_NAME: Final = "oharness_session"
CSRF_HEADER: Final = "x-csrf-token"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})


def load_or_create_token(home: Path) -> str:
    """The daemon token of this home, created (0600) on first start."""
    path = home / TOKEN_FILE
    try:
        token = path.read_text("utf-8").strip()
    except FileNotFoundError:
        token = ""
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc
    if token:
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, 0o600)  # a token readable by others is tightened, not trusted less
        return token
    token = secrets.token_urlsafe(32)
    home.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (token + "\n").encode("utf-8"), mode=0o600)
    os.chmod(path, 0o600)
    return token


def host_name(value: str) -> str:
    """The host part of a Host header (``[::1]:8080`` → ``::1``), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


@dataclass
class DaemonAuth:
    """Checks every request; holds the token, the page session and the one-time code."""

    token: str
    allowed_hosts: frozenset[str] = LOOPBACK_HOSTS
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    page_code: str | None = field(default_factory=lambda: secrets.token_urlsafe(24))
    backoff: FailureBackoff = field(default_factory=FailureBackoff)

    @classmethod
    def for_host(cls, token: str, bind_host: str, extra: Collection[str] = ()) -> DaemonAuth:
        hosts = {*LOOPBACK_HOSTS, host_name(bind_host), *(host_name(h) for h in extra)}
        return cls(token, frozenset(hosts))

    @property
    def csrf_token(self) -> str:
        return hmac.new(
            self.token.encode(), b"csrf:" + self.session.encode(), hashlib.sha256
        ).hexdigest()

    def page_url(self, base: str) -> str | None:
        """The one-time URL that gives a browser its cookie (None once used)."""
        return f"{base.rstrip('/')}/auth?code={self.page_code}" if self.page_code else None

    def new_page_url(self, base: str) -> str:
        """A new one-time sign-in URL (any earlier unused one stops working)."""
        self.page_code = secrets.token_urlsafe(24)
        return f"{base.rstrip('/')}/auth?code={self.page_code}"

    def redeem(self, connection: HTTPConnection, code: str) -> None:
        """Use the one-time code; raise :class:`DaemonApiError` for a wrong or used one."""
        expected = self.page_code
        if expected is None or not hmac.compare_digest(code.encode(), expected.encode()):
            raise self.wrong(
                connection,
                "this sign-in link was already used or is wrong: 'oharness setup' prints a new one",
            )
        self.page_code = None

    def wrong(self, connection: HTTPConnection, message: str) -> DaemonApiError:
        """The refusal of a wrong credential: 401, or 429 once the client is in back-off."""
        wait = self.backoff.failed(connection.client.host if connection.client else "")
        if wait is None:
            return DaemonApiError(401, "token_required", message)
        return too_many_attempts(wait)

    def check(self, connection: HTTPConnection, method: str) -> str:
        """Raise :class:`DaemonApiError` unless the request may proceed; how it proved it."""
        how = self._credential(connection, method)
        self.check_host(connection)
        return how

    def _credential(self, connection: HTTPConnection, method: str) -> str:
        header = connection.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value:
            if hmac.compare_digest(value.strip().encode(), self.token.encode()):
                return "bearer"
            raise self.wrong(connection, "the daemon token is wrong (see daemon-token)")
        cookie = connection.cookies.get(COOKIE_NAME)
        if cookie and hmac.compare_digest(cookie.encode(), self.session.encode()):
            if method not in SAFE_METHODS:
                sent = connection.headers.get(CSRF_HEADER, "")
                if not hmac.compare_digest(sent.encode(), self.csrf_token.encode()):
                    fix = "(GET /auth/csrf gives it; a reload of the page takes it up)"
                    if not sent:
                        message = "a browser request that changes something needs the "
                        raise DaemonApiError(401, "token_required", f"{message}X-CSRF-Token {fix}")
                    raise self.wrong(connection, f"the X-CSRF-Token header is wrong {fix}")
            return "cookie"
        raise DaemonApiError(
            401,
            "token_required",
            "send 'Authorization: Bearer <token>' (the token is in $OHARNESS_HOME/daemon-token)",
        )

    def check_host(self, connection: HTTPConnection) -> None:
        """Refuse a Host or Origin naming anything but this daemon (DNS rebinding, CSRF)."""
        sent_to = connection.headers.get("host", "")
        host = host_name(sent_to)
        if host not in self.allowed_hosts:
            raise DaemonApiError(
                403,
                "host_not_allowed",
                f"requests for host {host!r} are refused: use 127.0.0.1 or localhost (or a host "
                "the daemon was started with --host)",
            )
        origin = connection.headers.get("origin")
        if origin is not None and not self.own_origin(origin, sent_to):
            raise DaemonApiError(
                403,
                "origin_not_allowed",
                "cross-origin requests are refused: only pages the daemon serves itself "
                "(same host and port) may call it from a browser",
            )

    def own_origin(self, origin: str, sent_to: str) -> bool:
        """True when ``origin`` is the daemon's own: http(s), an allowed host, and the port of
        the Host header ``sent_to`` (another port on localhost is another program's page)."""
        parts = urlsplit(origin.strip().lower())
        if parts.scheme not in ("http", "https"):
            return False
        if host_name(parts.netloc) not in self.allowed_hosts:
            return False
        port = _port(parts.netloc, parts.scheme)
        return port is not None and port == _port(sent_to.strip().lower(), "http")


def _port(netloc: str, scheme: str) -> int | None:
    """The port of a ``host[:port]`` (the scheme's default without one; None if malformed)."""
    try:
        port = urlsplit(f"//{netloc}").port
    except ValueError:
        return None
    return port if port is not None else (443 if scheme == "https" else 80)
