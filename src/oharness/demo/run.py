"""``oharness demo``: a temporary home, a sample project on two devices, its own sync server,
and the daemon serving it all on loopback (spec 11) — until Ctrl-C, which removes everything.

Order of events: stale folders of killed demos are removed; the port is bound (a taken one
is replaced by a free one, and said); the temporary home is created and locked; this device's
notes are written; the sync server starts and both devices sign in and sync, leaving a
conflict; the daemon starts on the bound port. On the way out (Ctrl-C, SIGTERM, an error) the
daemon stops first, then the sync server, then the temporary home is deleted.
"""

from __future__ import annotations

import errno
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from oharness.daemon.serve import DaemonServer
from oharness.daemon.state import DaemonOptions
from oharness.daemon.tasks.dream import ReviewDreamer
from oharness.demo.cloud import CloudProcess, start_cloud
from oharness.demo.home import PROJECT_NAME, DemoHome, remove_stale
from oharness.demo.seed import (
    SeedClock,
    Seeded,
    make_conflict,
    sign_in,
    sync_device,
    write_sample_notes,
)
from oharness.demo.status import StatusWatch
from oharness.errors import StorageError
from oharness.memory.workspace import wall_clock_ms
from oharness.server.auth import mint_token

log = logging.getLogger(__name__)
DEFAULT_PORT: Final = 4319
DEMO_USER: Final = "demo-user"
TOKEN_TTL_SECONDS: Final = 7 * 86_400


@dataclass(frozen=True)
class DemoOptions:
    """How ``oharness demo`` runs; the CLI fills it from argv and the environment."""

    #: The command that runs the sync server child (``… --storage DIR`` is appended).
    cloud_command: Sequence[str]
    #: The child's environment (the CLI passes a minimal one, never API keys; ``HOME`` is the
    #: temporary home).
    cloud_env: Mapping[str, str] = field(default_factory=dict)
    port: int = DEFAULT_PORT
    sync_server: bool = True
    #: Where the temporary home goes (default: the system's temporary folder).
    temp_parent: Path | None = None
    #: Opens the page in a browser; ``None`` when there is none or ``--no-open``.
    open_browser: Callable[[str], None] | None = None
    announce: Callable[[str], None] = print
    status_seconds: float = 1.0
    #: When the other device writes a note while the demo runs (seconds after the start).
    other_device_after: float | None = 20.0


def bind_port(port: int, announce: Callable[[str], None]) -> socket.socket:
    """A listening loopback socket on ``port``, or on a free port when that one is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
        return sock
    except OSError as exc:
        sock.close()
        if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise StorageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
        why = "is taken" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    announce(f"port {port} {why}; using the free port {sock.getsockname()[1]} instead")
    return sock


def run_demo(options: DemoOptions) -> None:
    """Run the demo until SIGINT/SIGTERM (blocking); everything it made is gone afterwards."""
    announce = options.announce
    for folder in remove_stale(options.temp_parent):
        announce(f"removed the temporary home of a demo that was killed: {folder}")
    sock = bind_port(options.port, announce)
    home: DemoHome | None = None
    cloud: CloudProcess | None = None
    try:
        home = DemoHome.create(options.temp_parent)
        announce(f"temporary home: {home.root} (nothing of yours is read or changed)")
        seeded, cloud = _prepare(home, options)
        _serve(home, cloud, seeded, sock, options)
    finally:
        if cloud is not None:
            cloud.stop()
        sock.close()
        if home is not None:
            home.remove()
            if home.root.exists():
                announce(f"demo stopped; {home.root} could not be removed (the next start will)")
            else:
                announce("demo stopped; its temporary home is removed")


def _prepare(home: DemoHome, options: DemoOptions) -> tuple[Seeded, CloudProcess | None]:
    clock = SeedClock()
    seeded = write_sample_notes(home.this_device, clock)
    if not options.sync_server:
        # Not signed in: the pass records the error the page and `sync status` show.
        sync_device(home.this_device)
        return seeded, None
    secret = secrets.token_hex(32)
    cloud = start_cloud(
        options.cloud_command,
        home.cloud,
        secret,
        log=home.root / "sync-server.log",
        env={**options.cloud_env, "HOME": str(home.root)},
    )
    try:
        token = mint_token(
            secret, DEMO_USER, now=int(time.time()), ttl_seconds=TOKEN_TTL_SECONDS, plan="paid"
        )
        for device in (home.this_device, home.other_device):
            sign_in(device, cloud.origin, token)
        make_conflict(home.this_device, home.other_device, seeded, clock)
    except BaseException:
        cloud.stop()
        raise
    return seeded, cloud


def _serve(
    home: DemoHome,
    cloud: CloudProcess | None,
    seeded: Seeded,
    sock: socket.socket,
    options: DemoOptions,
) -> None:
    device = home.this_device
    daemon_options = DaemonOptions(
        home=device.home,
        start=device.project,
        sync_token=None,
        small_model=None,
        dreamer=ReviewDreamer(clock=wall_clock_ms, token=None),
    )
    watch = StatusWatch(
        home,
        cloud,
        seeded,
        options.announce,
        period=options.status_seconds,
        other_device_after=options.other_device_after,
    )

    def started(app: Any, url: str) -> None:
        page = app.state.daemon.auth.page_url(url) or url
        watch.start(app, url, page)
        if options.open_browser is not None:
            opener = options.open_browser
            threading.Thread(target=lambda: opener(page), name="demo-browser", daemon=True).start()

    server = DaemonServer(
        daemon_options,
        port=sock.getsockname()[1],
        announce=lambda line: log.debug("%s", line),
        listen_socket=sock,
        on_started=started,
    )
    try:
        server.run()
    finally:
        watch.stop()


__all__ = ["DEFAULT_PORT", "PROJECT_NAME", "DemoOptions", "bind_port", "run_demo"]
