"""Running the daemon: one per home, its address file, uvicorn, a clean stop (spec 10).

``$OHARNESS_HOME/daemon.lock`` is held (an OS file lock) for as long as the daemon runs, so a
second ``oharness serve`` on the same home stops at once and says where the first one runs
(read from ``$OHARNESS_HOME/daemon.json``: ``{"url", "pid", "host", "port", "startedAt"}``).
The same lock tells CLI commands and ``oharness chat`` that background sync is the daemon's
job (:mod:`oharness.sync.daemon_lock`). SIGTERM and SIGINT stop uvicorn gracefully: the
lifespan drains every workspace (running tasks end ``workspace_removed``; their writes are
atomic, so nothing is half-written) before the lock is released and the address file removed.
"""

from __future__ import annotations

import contextlib
import gc
import ipaddress
import json
import logging
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import uvicorn

from oharness.daemon.app import create_app
from oharness.daemon.state import DaemonOptions
from oharness.errors import OHarnessError, UnavailableError
from oharness.fsio import atomic_write
from oharness.sync.daemon_lock import DaemonLock, read_daemon_info

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class DaemonServer:
    """One daemon process: lock, address file, app, uvicorn."""

    options: DaemonOptions
    port: int = 0
    announce: Callable[[str], None] = print
    #: A socket already bound (the demo binds its port itself, so a taken one is seen first).
    listen_socket: socket.socket | None = None
    #: Called with the app and the daemon's URL once it listens.
    on_started: Callable[[Any, str], None] | None = None

    def run(self) -> None:
        """Serve until SIGTERM/SIGINT (blocking)."""
        lock = DaemonLock(self.options.home)
        if not lock.acquire():
            info = read_daemon_info(self.options.home)
            where = f" at {info['url']} (pid {info.get('pid')})" if info else ""
            raise UnavailableError(
                f"a daemon already runs for {self.options.home}{where}; use it, or stop it "
                "first (one daemon per OHARNESS_HOME)",
                feature="daemon",
            )
        try:
            self._serve(lock)
        finally:
            with contextlib.suppress(OSError):
                (self.options.home / "daemon.json").unlink()
            lock.release()

    def _serve(self, lock: DaemonLock) -> None:
        host = self.options.bind_host
        # Bound before the app is built: a taken port is refused at once, with its fix.
        listening = self.listen_socket or listening_socket(host, self.port)
        app = create_app(self.options)
        warm_up(app)
        config = uvicorn.Config(
            app,
            host=host,
            port=self.port,
            log_config=None,
            access_log=False,
            lifespan="on",
            ws="none",
            timeout_graceful_shutdown=10,
        )
        server = _AnnouncingServer(config, self, app)
        server.run(sockets=[listening])

    def started(self, app: Any, port: int) -> None:
        host = self.options.bind_host
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}"
        info = {"url": url, "pid": os.getpid(), "host": host, "port": port}
        info["startedAt"] = self.options.clock()
        atomic_write(
            self.options.home / "daemon.json",
            (json.dumps(info, indent=2) + "\n").encode("utf-8"),
            mode=0o600,
        )
        auth = app.state.daemon.auth
        self.announce(f"oharness daemon on {url} (home {self.options.home})")
        self.announce(f"token: {self.options.home / 'daemon-token'}")
        self.announce(app.state.daemon.folders.describe())
        page = auth.page_url(url)
        if page:
            self.announce(f"open once in a browser to sign it in (the Memory page): {page}")
        if self.on_started is not None:
            self.on_started(app, url)


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; a port taken or not allowed is refused, naming
    the fix."""
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise UnavailableError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another port "
            "with --port, or stop the program that listens there",
            feature="daemon",
        ) from exc
    return sock


def warm_up(app: Any) -> None:
    """Load the default workspace's recall index before listening, so the first prompt's
    recall is as fast as the rest; then move everything loaded so far out of the garbage
    collector's view (``gc.freeze``), so a full collection never walks the index mid-request."""
    recall = app.state.daemon.registry.default.workspace.service.recall
    if recall is not None:
        try:
            recall.index()
            recall.flush_cache()
        except OHarnessError as exc:  # the first recall will try again and say why
            log.warning("recall index not loaded at start: %s", exc.message)
    gc.freeze()


class _AnnouncingServer(uvicorn.Server):
    """uvicorn, telling the daemon its real port once it listens."""

    def __init__(self, config: uvicorn.Config, owner: DaemonServer, app: Any) -> None:
        super().__init__(config)
        self._owner = owner
        self._app = app

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            # SIGTERM/SIGINT is how a daemon is stopped: after the graceful shutdown the
            # process exits normally (uvicorn would re-raise the signal and skip our cleanup).
            self._captured_signals.clear()

    async def shutdown(self, sockets: Any = None) -> None:
        # End the event streams first: uvicorn waits for open connections before the
        # lifespan's drain, and an SSE stream never ends by itself.
        self._app.state.daemon.bus.close()
        await super().shutdown(sockets)

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:
            port = self.config.port
            for server in getattr(self, "servers", []):
                for sock in server.sockets:
                    port = sock.getsockname()[1]
            self._owner.started(self._app, port)
