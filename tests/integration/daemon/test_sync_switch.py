"""Switching sync off cancels a pass in flight at once, a request already sent included, and
a switch flipped by another process is honoured within a second."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from daemon_support import LiveDaemon, live_daemon

from oharness.daemon import DaemonOptions
from oharness.project.paths import HomeLayout
from oharness.sync.settings_file import SyncSettingsFile


class HangingServer:
    """Accepts a request and never answers (until the test ends)."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.disconnected = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._hang()

            def do_POST(self) -> None:
                self._hang()

            def _hang(self) -> None:
                outer.arrived.set()
                while not outer.release.wait(0.02):
                    try:  # a closed client connection reads as end of file
                        self.connection.settimeout(0.0)
                        if self.connection.recv(1, 2) == b"":  # MSG_PEEK
                            outer.disconnected.set()
                            return
                    except BlockingIOError:
                        continue
                    except OSError:
                        outer.disconnected.set()
                        return

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hanging() -> Iterator[HangingServer]:
    server = HangingServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def daemon(tmp_path: Path, hanging: HangingServer) -> Iterator[LiveDaemon]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    SyncSettingsFile(HomeLayout(home)).login(hanging.url, "token-0123456789")
    with live_daemon(DaemonOptions(home=home, start=project)) as running:
        yield running


def _pass_in_flight(
    daemon: LiveDaemon, hanging: HangingServer
) -> tuple[threading.Thread, list[Any]]:
    sync = daemon.state.sync
    assert sync is not None
    reports: list[Any] = []
    target = sync.targets(daemon.state.registry.default)[0]
    thread = threading.Thread(
        target=lambda: reports.extend(sync.coordinator.sync_now(target)), daemon=True
    )
    thread.start()
    assert hanging.arrived.wait(10), "the pass never reached the server"
    return thread, reports


def test_switching_off_aborts_a_request_already_sent(
    daemon: LiveDaemon, hanging: HangingServer
) -> None:
    thread, reports = _pass_in_flight(daemon, hanging)
    started = time.monotonic()
    with daemon.client() as http:
        assert http.post("/sync/off").json() == {"enabled": False}
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - started < 2.0  # immediate; the margin is for a loaded machine
    assert hanging.disconnected.wait(2)
    assert reports and reports[0].result is None
    assert SyncSettingsFile(daemon.state.registry.default.workspace.home).enabled() is False


def test_a_switch_flipped_elsewhere_is_honoured_within_a_second(
    daemon: LiveDaemon, hanging: HangingServer
) -> None:
    thread, _ = _pass_in_flight(daemon, hanging)
    started = time.monotonic()
    SyncSettingsFile(daemon.state.registry.default.workspace.home).set_enabled(False)  # the CLI
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - started < 2.5  # the 1 s watch plus a loaded machine
    assert hanging.disconnected.wait(2)
