"""The demo's own sync server: ``oharness sync-server``'s app in a child process on loopback.

The parent starts the child with a command the CLI gives it, sends the development token's
signing secret as the first line of the child's stdin (never in argv or the environment, which
other users may read) and keeps that pipe open. The child binds ``127.0.0.1`` on a free port,
prints ``port N`` and serves until its stdin closes — which happens when the parent stops it
and also when the parent dies, even by ``kill -9``: a killed demo never leaves a server behind.
The child runs in its own session, so a Ctrl-C in the terminal reaches only the demo, which
then stops the daemon before the server (in that order, so no pass fails on the way out).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Final

import uvicorn

from oharness.errors import OHarnessError, UnavailableError
from oharness.server.app import create_app
from oharness.server.config import JwtSettings, ServerSettings
from oharness.storage.file import FileObjectStore

START_SECONDS: Final = 60.0
STOP_SECONDS: Final = 10.0
#: Generous: the demo's two devices sync often while it starts.
RATE_PER_MINUTE: Final = 6000


class CloudProcess:
    """The running child (parent side)."""

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def exit_code(self) -> int | None:
        """``None`` while it runs."""
        return self.process.poll()

    def stop(self) -> None:
        """Close its stdin (it stops), then terminate and kill if it lingers."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        for step in (None, self.process.terminate, self.process.kill):
            if step is not None:
                with contextlib.suppress(OSError):
                    step()
            try:
                self.process.wait(timeout=STOP_SECONDS)
                break
            except subprocess.TimeoutExpired:
                continue
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_cloud(
    command: Sequence[str], storage: Path, secret: str, *, log: Path, env: dict[str, str]
) -> CloudProcess:
    """Start the child (``command --storage DIR``, in DIR's parent) and wait until it listens."""
    with log.open("ab") as log_file:
        process = subprocess.Popen(
            [*command, "--storage", str(storage)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
            env=env,
            cwd=storage.parent,
            start_new_session=True,
        )
    assert process.stdin is not None and process.stdout is not None
    cloud = CloudProcess(process, 0)
    try:
        process.stdin.write(secret + "\n")
        process.stdin.flush()
        cloud.port = _read_port(process.stdout)
    except BaseException as exc:
        cloud.stop()  # also on Ctrl-C while waiting: never leave the child behind
        if not isinstance(exc, (OSError, OHarnessError)):
            raise
        detail = exc.message if isinstance(exc, OHarnessError) else str(exc)
        raise UnavailableError(
            f"the demo's sync server did not start ({detail}); see {log}, or run "
            "'oharness demo --no-sync-server'",
            feature="demo-sync-server",
        ) from exc
    return cloud


def _read_port(stdout: IO[str]) -> int:
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_SECONDS)
    line = found[0].strip() if found else ""
    if not line.startswith("port "):
        reason = "no answer in time" if not found else "it exited"
        raise UnavailableError(reason, feature="demo-sync-server")
    return int(line.split()[1])


def serve_cloud(
    storage: Path, lines: IO[str], announce: Callable[[str], None], *, host: str = "127.0.0.1"
) -> None:
    """The child: read the secret, listen on a free port, serve until ``lines`` ends."""
    secret = lines.readline().strip()
    settings = ServerSettings(jwt=JwtSettings(secret=secret), rate_per_minute=RATE_PER_MINUTE)
    app = create_app(FileObjectStore(storage), settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="off", ws="none", server_header=False
    )
    server = uvicorn.Server(config)

    def watch_parent() -> None:
        while lines.readline():  # anything after the secret is ignored; EOF means stop
            continue
        server.should_exit = True

    def listening() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.01)
        if server.started:
            announce(f"port {sock.getsockname()[1]}")

    threading.Thread(target=watch_parent, name="demo-parent", daemon=True).start()
    threading.Thread(target=listening, name="demo-listening", daemon=True).start()
    server.run(sockets=[sock])
