"""A project used early is synced in the background: a use of the project (an open Memory page,
a recall) before the daemon's watch has scheduled its folders still gets its notes checked once
they are scheduled — right after start, and after a sign-in made while the daemon runs; and a
"sync now" through the REST API announces what it brought, like a background pass.

The daemon's coordinator checks a project's notes only while the project is in use (spec 07.5);
a use that arrived before the folders were scheduled used to be dropped, so the project's notes
waited for the next use, however long that took.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
from daemon_support import LiveDaemon, events_until, live_daemon
from sync_server_support import (
    Api,
    LiveServer,
    live_server,
    make_settings,
    note_text,
    project_scope,
    put,
    token_for,
)

from oharness.daemon import DaemonOptions
from oharness.memory.workspace import open_workspace
from oharness.project.paths import HomeLayout
from oharness.storage.file import FileObjectStore
from oharness.sync.settings_file import SyncSettingsFile

#: Far longer than the test: the watch thread never looks again by itself.
_NEVER = 3600.0


@contextlib.contextmanager
def _world(tmp_path: Path, *, signed_in: bool) -> Iterator[tuple[LiveServer, LiveDaemon, Path]]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    workspace = open_workspace(project, home, register=True)
    try:
        workspace.service.remember("Deploys go out on Tuesdays", "At noon.\n", scope="project")
    finally:
        workspace.close()
    with live_server(FileObjectStore(tmp_path / "storage"), make_settings()) as server:
        if signed_in:
            SyncSettingsFile(HomeLayout(home)).login(server.url, token_for("ann", plan="paid"))
        options = DaemonOptions(home=home, start=project, watch_seconds=0)
        with live_daemon(options) as daemon:
            yield server, daemon, home


def _scopes(http: httpx2.Client) -> dict[str, Any]:
    return {scope["scope"]: scope for scope in http.get("/sync/status").json()["scopes"]}


def _project_synced_in_the_background(daemon: LiveDaemon, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    with daemon.client() as http:
        while time.monotonic() < deadline:
            if _scopes(http)["project"]["lastSyncedAt"] is not None:
                return True
            time.sleep(0.1)
    return False


def test_a_project_used_right_after_start_is_synced(tmp_path: Path) -> None:
    with _world(tmp_path, signed_in=True) as (_server, daemon, _home):
        daemon.state.sync.interval = _NEVER  # only the look at start schedules the folders
        assert {target.scope for target in daemon.state.sync.coordinator.targets()} == {
            "project",
            "user",
        }, "a home signed in before start has its folders scheduled once the daemon answers"
        with daemon.client() as http:
            assert http.get("/memory/sync").status_code == 200  # the page: the project in use
        assert _project_synced_in_the_background(daemon)


def test_a_use_before_a_sign_in_counts_once_signed_in(tmp_path: Path) -> None:
    with _world(tmp_path, signed_in=False) as (server, daemon, home):
        sync = daemon.state.sync
        sync.interval = _NEVER
        with daemon.client() as http:
            assert http.get("/memory/sync").status_code == 200  # used while signed out
        assert sync.coordinator.targets() == []
        SyncSettingsFile(HomeLayout(home)).login(server.url, token_for("ann", plan="paid"))
        sync.watch_once()  # what the watch thread does within a second
        assert _project_synced_in_the_background(daemon)


def test_sync_now_through_the_api_announces_what_it_pulled(tmp_path: Path) -> None:
    with _world(tmp_path, signed_in=True) as (server, daemon, _home):
        daemon.state.sync.interval = _NEVER  # the project is not in use: only sync now pulls
        # A folder's first pass runs once it is scheduled, at start; let it end first, or a
        # slow one would pull the other device's note below before sync now does.
        assert _project_synced_in_the_background(daemon, timeout=60.0)
        project_id = daemon.state.registry.default.project_id
        note_id = "from-the-laptop-1ab"
        with server.client() as http:  # another device commits a note to the project
            Api(http, token_for("ann", plan="paid")).ok_commit(
                [put(note_id, note_text(note_id, "Written elsewhere.\n"))],
                scope=project_scope(project_id),
            )
        with (
            daemon.client() as http,
            daemon.client() as listener,
            listener.stream("GET", "/events") as stream,
        ):
            lines = stream.iter_lines()
            assert next(lines).startswith(": connected")
            assert http.post("/sync/now").status_code == 200
            seen = events_until(lines, '"type":"memory_changed"')
        assert (daemon.options.start / "MEMORY" / f"{note_id}.md").exists()
        assert {"type": "memory_changed", "scope": "project", "source": "sync"} in [
            {"type": event["type"], **event["data"]} for event in seen
        ], "every page hears what sync now brought"
        statuses = [event["data"] for event in seen if event["type"] == "sync_status"]
        assert any(data.get("scope") == "project" and data.get("pulled") == 1 for data in statuses)
