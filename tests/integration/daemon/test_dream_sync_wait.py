"""A dream started while a sync pass holds a scope waits for that pass (bounded, cancellable)
instead of refusing its merges: the daemon's own background pass, held mid-request by a live
sync server on loopback, and a lock held by another process."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock
import httpx2
import pytest
from daemon_support import LiveDaemon, wait_terminal
from sync_server_support import LiveServer, make_settings, token_for
from test_dream_review import Clock, _plant, port_in_range

from oharness.daemon import DaemonOptions
from oharness.daemon.tasks.dream import ReviewDreamer
from oharness.daemon.tasks.lane import CancelToken, TaskCancelled
from oharness.memory.workspace import Workspace, open_workspace
from oharness.server.app import create_app
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import SyncService, sync_targets

WAITING = "waiting for the sync pass in flight to end"


class GatedApp:
    """The sync server, holding the first request after :meth:`arm` until :meth:`release`."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.armed = threading.Event()
        self.held = threading.Event()
        self.released = threading.Event()

    def arm(self) -> None:
        self.armed.set()

    def release(self) -> None:
        self.released.set()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.armed.is_set():
            self.armed.clear()
            self.held.set()
            while not self.released.is_set():
                await asyncio.sleep(0.01)
        await self.app(scope, receive, send)


@pytest.fixture
def synced(tmp_path: Path) -> Iterator[tuple[Workspace, Clock, dict[str, str], GatedApp]]:
    """Planted same-topic pairs in both scopes, synced once to a live (gated) sync server."""
    project, home, clock = tmp_path / "project", tmp_path / "home", Clock()
    project.mkdir()
    ids = _plant(project, home, clock)
    gate = GatedApp(create_app(MemoryObjectStore(), make_settings()))
    server = LiveServer(gate, port=port_in_range()).start()  # type: ignore[arg-type]
    try:
        workspace = open_workspace(project, home, register=True, clock=clock)
        SyncSettingsFile(workspace.home).login(server.url, token_for("alice", plan="paid"))
        with httpx2.Client(timeout=30) as http:
            sync = SyncService(
                workspace.home, backups=workspace.service.backups(), clock=clock, http=http
            )
            for target in sync_targets(workspace):
                assert sync.run(target).error is None
        yield workspace, clock, ids, gate
    finally:
        gate.release()
        server.stop()


def _logged(caplog: pytest.LogCaptureFixture, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while text not in caplog.text:
        assert time.monotonic() < deadline, f"never logged: {text}"
        time.sleep(0.02)


def test_a_dream_waits_for_the_daemons_background_pass(
    synced: tuple[Workspace, Clock, dict[str, str], GatedApp], caplog: pytest.LogCaptureFixture
) -> None:
    workspace, clock, ids, gate = synced
    assert workspace.project is not None
    caplog.set_level(logging.INFO, logger="oharness.sync.batch")
    options = DaemonOptions(
        home=workspace.home.home,
        start=workspace.project.root,
        clock=clock,
        dreamer=ReviewDreamer(clock=clock),
        background_sync=True,
    )
    daemon = LiveDaemon(options, port=port_in_range()).start()
    try:
        sync = daemon.state.sync
        assert sync is not None
        target = next(t for t in sync.targets(daemon.state.registry.default) if t.scope == "user")
        gate.arm()
        background = threading.Thread(target=lambda: sync.coordinator.sync_now(target))
        background.start()
        assert gate.held.wait(20), "the background pass never reached the server"
        with daemon.client() as client:
            task_id = client.post("/workspace/memory/dream").json()["taskId"]
            _logged(caplog, WAITING)
            waiting = client.get(f"/workspace/memory/dream/{task_id}").json()
            assert waiting["status"] == "running"
            gate.release()
            done = wait_terminal(client, "dream", task_id, timeout=120)
        background.join(20)
    finally:
        daemon.stop()
    assert done["status"] == "completed", done
    result = done["result"]
    assert result["refusedEntries"] == []
    assert {entry["scope"] for entry in result["dedupedEntries"]} == {"project", "user"}
    assert all(isinstance(entry["committedVersion"], int) for entry in result["dedupedEntries"])
    fresh = open_workspace(
        workspace.project.root, workspace.home.home, register=False, clock=clock
    ).service
    assert fresh.store("user").get(ids["user_young"]) is None
    assert fresh.store("project").get(ids["young"]) is None


def _hold_scope(workspace: Workspace, scope: str) -> filelock.BaseFileLock:
    """Take a scope's sync lock as another process's pass would."""
    service = SyncService(workspace.home, backups=workspace.service.backups(), clock=Clock())
    target = next(t for t in sync_targets(workspace) if t.scope == scope)
    lock = filelock.FileLock(service.base(target).lock_path, timeout=5)
    lock.acquire()
    return lock


def test_a_dream_waiting_for_a_pass_stops_at_once_when_cancelled(
    synced: tuple[Workspace, Clock, dict[str, str], GatedApp], caplog: pytest.LogCaptureFixture
) -> None:
    workspace, clock, ids, _ = synced
    caplog.set_level(logging.INFO, logger="oharness.sync.batch")
    lock = _hold_scope(workspace, "project")
    token = CancelToken()
    raised: list[BaseException] = []

    def dream() -> None:
        try:
            ReviewDreamer(clock=clock).dream(workspace, token)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=dream)
    try:
        thread.start()
        _logged(caplog, WAITING)
        cancelled_at = time.monotonic()
        token.cancel()
        thread.join(30)
        assert not thread.is_alive()
        assert time.monotonic() - cancelled_at < 5  # a tenth of a second, on an idle machine
    finally:
        lock.release()
    assert len(raised) == 1 and isinstance(raised[0], TaskCancelled)
    assert workspace.service.store("project").get(ids["young"]) is not None  # nothing merged


def test_a_pass_that_never_ends_refuses_the_merge_after_the_bound(
    synced: tuple[Workspace, Clock, dict[str, str], GatedApp],
) -> None:
    workspace, clock, ids, _ = synced
    lock = _hold_scope(workspace, "project")
    try:
        outcome = ReviewDreamer(clock=clock, pass_wait_s=0.5).dream(workspace, CancelToken())
    finally:
        lock.release()
    (refused,) = outcome.refused_entries
    assert refused["scope"] == "project" and refused["code"] == "not_synced"
    assert "another process is syncing this scope, still after 0.5 s" in refused["reason"]
    assert workspace.service.store("project").get(ids["young"]) is not None
    assert [entry["scope"] for entry in outcome.deduped_entries] == ["user"]
