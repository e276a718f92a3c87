"""A live daemon in a background thread (real HTTP on loopback), gates, a session-host double;
machines driven through the real CLI, each with an ``oharness serve`` process of its own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from sync_support import OHARNESS, free_port, run_cli, serve_in_thread

from oharness.daemon import DaemonOptions, create_app
from oharness.daemon.tasks.lane import Task, TaskOutcome, TaskWork
from oharness.daemon.workspaces import DaemonWorkspace

CLIENT = "X-OHarness-Client-Id"


class FailingSessions:
    """A session host that fails the test on any call: memory tasks are sessionless."""

    calls: list[str]

    def __init__(self) -> None:
        self.calls = []

    def _fail(self, name: str) -> Any:
        self.calls.append(name)
        raise AssertionError(f"a memory task asked the host to {name} a session")

    def create_session(self, project_id: str) -> Any:
        return self._fail("create")

    def load_session(self, session_id: str) -> Any:
        return self._fail("load")

    def resume_session(self, session_id: str) -> Any:
        return self._fail("resume")

    def prompt(self, session_id: str, text: str) -> Any:
        return self._fail("prompt")


class Gate:
    """Holds every task's work until opened; records the order work started and ended."""

    def __init__(self, *, closed: bool = False) -> None:
        self.open_event = threading.Event()
        if not closed:
            self.open_event.set()
        self.started: list[str] = []
        self.ended: list[str] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def open(self) -> None:
        self.open_event.set()

    def wrap(self, work: TaskWork, hosted: DaemonWorkspace) -> TaskWork:
        def gated(task: Task) -> TaskOutcome:
            with self._lock:
                self.active += 1
                self.max_active = max(self.max_active, self.active)
                self.started.append(task.task_id)
            try:
                while not self.open_event.wait(0.01):
                    if task.cancel.cancelled:
                        break
                return work(task)
            finally:
                with self._lock:
                    self.active -= 1
                    self.ended.append(task.task_id)

        return gated


@dataclass
class LiveDaemon:
    options: DaemonOptions
    port: int = 0
    app: Any = None
    _server: uvicorn.Server | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return str(self.app.state.daemon.auth.token)

    @property
    def state(self) -> Any:
        return self.app.state.daemon

    def start(self) -> LiveDaemon:
        self.app = create_app(self.options)
        self._server, self._thread, self.port = serve_in_thread(
            self.app, port=self.port, lifespan="on", timeout=20
        )
        return self

    def stop(self) -> None:
        """Stop as ``oharness serve`` does: the event streams end first (uvicorn waits for
        open connections, and an SSE stream a test left open never ends by itself)."""
        if self._server is not None and self._thread is not None:
            self.state.bus.close()
            self._server.should_exit = True
            self._thread.join(timeout=20)

    def client(self, *, token: str | None = "default", **kwargs: Any) -> httpx2.Client:
        headers = dict(kwargs.pop("headers", {}))
        if token is not None:
            headers["Authorization"] = f"Bearer {self.token if token == 'default' else token}"
        return httpx2.Client(base_url=self.url, timeout=30, headers=headers, **kwargs)


@contextlib.contextmanager
def live_daemon(options: DaemonOptions) -> Iterator[LiveDaemon]:
    daemon = LiveDaemon(options).start()
    try:
        yield daemon
    finally:
        daemon.stop()


@contextlib.contextmanager
def project_daemon(tmp_path: Path, *, watch_seconds: float = 0) -> Iterator[LiveDaemon]:
    """A daemon started in a fresh project under ``tmp_path`` (home beside it), background sync
    off; ``watch_seconds`` the note watcher's interval (0: no note watcher)."""
    project = tmp_path / "project"
    project.mkdir()
    options = DaemonOptions(
        home=tmp_path / "home", start=project, background_sync=False, watch_seconds=watch_seconds
    )
    with live_daemon(options) as running:
        yield running


def wait_terminal(
    client: httpx2.Client,
    kind: str,
    task_id: str,
    *,
    headers: Any = None,
    prefix: str = "/workspace",
    timeout: float = 20,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"{prefix}/memory/{kind}/{task_id}", headers=headers or {})
        assert response.status_code == 200, response.text
        snapshot: dict[str, Any] = response.json()
        if snapshot["status"] in ("completed", "failed"):
            return snapshot
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {snapshot['status']}")
        time.sleep(0.02)


def make_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return root


def events_until(lines: Iterator[str], marker: str, timeout: float = 20) -> list[dict[str, Any]]:
    """An event stream's events up to (and including) the one whose line holds ``marker``."""
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    for line in lines:
        if line.startswith("data: "):
            found.append(json.loads(line[len("data: ") :]))
            if marker in line:
                return found
        assert time.monotonic() < deadline, "the marker event never came"
    raise AssertionError("the event stream ended")


@dataclass(frozen=True)
class CliMachine:
    """One machine (an ``OHARNESS_HOME``) working in ``project`` through the real CLI;
    ``secret`` signs the tokens ``oharness sync-server token`` makes."""

    home: Path
    project: Path
    secret: str

    def run(self, *args: str, stdin: str | None = None) -> str:
        return run_cli(self.home, self.project, *args, secret=self.secret, stdin=stdin)

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json"))

    def note(self, note_id: str) -> Path:
        return self.project / "MEMORY" / f"{note_id}.md"


def _daemon_process(home: Path, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OHARNESS_HOME": str(home), "OHARNESS_DAEMON_SYNC_SECONDS": "1"}
    env.pop("OHARNESS_TOKEN", None)
    with log.open("wb") as output:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [str(OHARNESS), "serve", "--port", str(free_port())],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=output,
        )


@contextlib.contextmanager
def daemon_processes(*places: tuple[Path, Path]) -> Iterator[None]:
    """``oharness serve`` for each (home, working folder), checking its folders every second
    (``OHARNESS_DAEMON_SYNC_SECONDS``); started (``daemon.json`` written) when entered, stopped
    with SIGTERM on exit. Each daemon's log is ``daemon.log`` in its home."""
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        for home, cwd in places:
            home.mkdir(parents=True, exist_ok=True)
            daemons.append(_daemon_process(home, cwd, home / "daemon.log"))
        deadline = time.monotonic() + 60
        for (home, _), daemon in zip(places, daemons, strict=True):
            while not (home / "daemon.json").exists():
                log = (home / "daemon.log").read_text(errors="replace")
                assert daemon.poll() is None, f"the daemon of {home} stopped: {log}"
                assert time.monotonic() < deadline, f"the daemon of {home} did not start: {log}"
                time.sleep(0.1)
        yield
    finally:
        for daemon in daemons:
            daemon.send_signal(signal.SIGTERM)
        for daemon in daemons:
            daemon.wait(timeout=60)


def arrives(path: Path, since: float, budget: float) -> float:
    """Seconds from ``since`` until ``path`` exists (fails past ``budget``)."""
    while not path.exists():
        assert time.monotonic() - since < budget, f"{path.name} did not arrive in {budget} s"
        time.sleep(0.2)
    return time.monotonic() - since
