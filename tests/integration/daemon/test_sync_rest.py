"""The daemon's sync endpoints over loopback: the same library calls as ``oharness sync``
(status, sync now, conflicts, resolve), against a live sync server."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_support import LiveDaemon, live_daemon
from sync_server_support import LiveServer, make_settings, token_for

from oharness.daemon import DaemonOptions
from oharness.memory.workspace import Workspace, open_workspace
from oharness.server.app import create_app
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync import actions
from oharness.sync.settings_file import SyncSettingsFile


def _git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.fixture
def server() -> Iterator[LiveServer]:
    running = LiveServer(create_app(MemoryObjectStore(), make_settings())).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def daemon(tmp_path: Path, server: LiveServer) -> Iterator[LiveDaemon]:
    home, project = tmp_path / "home", _git_project(tmp_path / "project")
    SyncSettingsFile(open_workspace(project, home, register=True).home).login(
        server.url, token_for("alice", plan="paid")
    )
    with live_daemon(DaemonOptions(home=home, start=project)) as running:
        yield running


def _workspace(daemon: LiveDaemon) -> Workspace:
    return daemon.state.registry.default.workspace


def test_sync_now_and_status_report_the_pass(daemon: LiveDaemon) -> None:
    with daemon.client() as http:  # after the daemon's first passes (it checks at start)
        assert http.post("/sync/now").status_code == 200
    note_id = _workspace(daemon).service.remember("Deploys on Tuesdays", "Noon.").id
    with daemon.client() as http:
        before = http.get("/sync/status").json()
        assert before["enabled"] is True and [s["scope"] for s in before["scopes"]] == [
            "project",
            "user",
        ]
        done = http.post("/sync/now")
        assert done.status_code == 200, done.text
        data = done.json()
        assert [p["scope"] for p in data["passes"]] == ["project", "user"]
        assert all(p["error"] is None and p["paused"] is None for p in data["passes"])
        project = data["scopes"][0]
        assert project["pushed"] == [note_id] and project["lastSyncedAt"] is not None
        assert http.get("/sync/status").json()["scopes"][0]["pushed"] == [note_id]


def test_a_conflict_is_listed_and_resolved_over_rest(
    tmp_path: Path, daemon: LiveDaemon, server: LiveServer
) -> None:
    here = _workspace(daemon)
    note_id = here.service.remember("Shared note", "line one\n").id
    with daemon.client() as http:
        assert http.post("/sync/now").status_code == 200
    assert here.project is not None
    elsewhere = tmp_path / "elsewhere"  # another machine: its own folder, the same project id
    (elsewhere / ".oharness").mkdir(parents=True)
    identity = here.project.root / ".oharness" / "project.json"
    (elsewhere / ".oharness" / "project.json").write_bytes(identity.read_bytes())
    other = open_workspace(elsewhere, tmp_path / "other-home", register=True)
    actions.login(other.home, server.url, token_for("alice", plan="paid"))
    service, targets = actions.workspace_sync(other, clock=lambda: 2_000_000_000_000)
    actions.sync_now(service, targets)
    other.service.remember("Shared note", "line one from elsewhere\n", id=note_id)
    assert not actions.sync_now(service, targets).failed
    here.service.remember("Shared note", "line one from here\n", id=note_id)
    with daemon.client() as http:
        http.post("/sync/now")
        found = http.get("/sync/conflicts").json()["conflicts"]
        assert [(c["id"], c["scope"]) for c in found] == [(note_id, "project")]
        both = http.post(f"/sync/conflicts/{note_id}/resolve", json={"keep": "local", "text": "x"})
        assert both.status_code == 400 and both.json()["code"] == "invalid_resolution"
        missing = http.post("/sync/conflicts/no-such-note/resolve", json={"keep": "local"})
        assert missing.status_code == 400 and "no open conflict" in missing.text
        resolved = http.post(f"/sync/conflicts/{note_id}/resolve", json={"keep": "local"})
        assert resolved.status_code == 200, resolved.text
        body = resolved.json()
        assert body["id"] == note_id and body["keep"] == "local" and len(body["backups"]) == 1
        assert http.get("/sync/conflicts").json()["conflicts"] == []
        pushed = http.post("/sync/now").json()["scopes"][0]["pushed"]
    assert pushed == [note_id]
    actions.sync_now(service, targets)
    assert "from here" in Path(other.service.find(note_id).path).read_text()


def test_sync_now_of_another_folder_is_refused_with_the_reason(
    tmp_path: Path, daemon: LiveDaemon
) -> None:
    """Only a folder of the project that this machine used is synced by path; anything else
    gets the reason, and no pass runs."""
    here = _workspace(daemon)
    assert here.project is not None and here.project.identity is not None
    project_id = here.project.identity.id
    other = _git_project(tmp_path / "other")
    open_workspace(other, here.home.home, register=True).close()  # another project, used
    with daemon.client() as http:
        route = f"/workspaces/{project_id}/sync/now"
        for body, status, code in (
            ({"path": str(other)}, 404, "folder_not_followed"),
            ({"path": "relative/folder"}, 400, "invalid_path"),
            ({"path": 7}, 400, "invalid_path"),
        ):
            answer = http.post(route, json=body)
            assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
        unqualified = http.post("/sync/now", json={"path": str(other)})
        assert unqualified.status_code == 400 and "/workspaces/" in unqualified.json()["error"]
        # The hosted folder itself, named by its path, is the hosted project's pass.
        own = http.post(route, json={"path": str(here.project.root)})
        assert own.status_code == 200 and [p["scope"] for p in own.json()["passes"]] == [
            "project",
            "user",
        ]
