"""Helpers for tests that run sync servers and daemons (imported by bare name: the root
conftest puts ``tests/support`` on ``sys.path``).

- :func:`serve_in_thread`: an ASGI app under uvicorn on a free loopback port, in a thread (the
  live sync server of ``tests/integration/server``, the live daemon of
  ``tests/integration/daemon``).
- :func:`sync_server_process`: ``oharness sync-server serve`` as its own process over file
  storage, ready once ``/healthz`` answers.
- :func:`run_cli`: the CLI through its entry point for one home, failing the test on an error.
- :func:`run_together`: callables started at one barrier on threads of their own (concurrent
  writers), every error reported.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import httpx2
import uvicorn

OHARNESS = Path(sys.executable).with_name("oharness")


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_in_thread(
    app: Any,
    *,
    port: int = 0,
    lifespan: Literal["auto", "on", "off"] = "off",
    timeout: float = 10.0,
) -> tuple[uvicorn.Server, threading.Thread, int]:
    """Start ``app`` on 127.0.0.1 (a free port unless given); the server, its thread, the port.

    Stop it with ``server.should_exit = True`` and a join of the thread.
    """
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port or free_port(),
        log_config=None,
        access_log=False,
        lifespan=lifespan,
        ws="none",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    return server, thread, config.port


@contextlib.contextmanager
def sync_server_process(
    storage: Path, secret: str, *, log: Path | None = None, rate_per_minute: int | None = None
) -> Iterator[str]:
    """``oharness sync-server serve`` over ``file://storage``; yields its origin.
    ``rate_per_minute``: the per-account request limit, for a module whose tests share one
    account and run dozens of passes within a minute (the default 60 is the product's)."""
    port = free_port()
    output = log.open("w") if log is not None else None
    process = subprocess.Popen(
        [
            str(OHARNESS),
            "sync-server",
            "serve",
            "--storage",
            f"file://{storage}",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env={
            **os.environ,
            "OHARNESS_SYNC_JWT_SECRET": secret,
            **(
                {"OHARNESS_SYNC_RATE_PER_MINUTE": str(rate_per_minute)}
                if rate_per_minute is not None
                else {}
            ),
        },
        stdout=output or subprocess.DEVNULL,
        stderr=subprocess.STDOUT if output else subprocess.DEVNULL,
    )
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(origin + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "no sync server"
            time.sleep(0.05)
        yield origin
    finally:
        process.terminate()
        process.wait(timeout=10)
        if output is not None:
            output.close()


def run_cli(
    home: Path, cwd: Path, *args: str, secret: str | None = None, stdin: str | None = None
) -> str:
    """``oharness ARGS`` in ``cwd`` for ``home`` (no ``OHARNESS_TOKEN``), ``stdin`` as its
    input; its stdout."""
    env = {**os.environ, "OHARNESS_HOME": str(home)}
    if secret is not None:
        env["OHARNESS_SYNC_JWT_SECRET"] = secret
    env.pop("OHARNESS_TOKEN", None)
    done = subprocess.run(
        [str(OHARNESS), *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_together(
    works: Sequence[Callable[[], object]], *, start_within: float = 60, finish_within: float = 900
) -> None:
    """Run every callable on a thread of its own, all released at once; fail on any error."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(works))

    def run(work: Callable[[], object]) -> None:
        try:
            barrier.wait(timeout=start_within)
            work()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(work,)) for work in works]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=finish_within)
    assert not errors, errors[:3]
