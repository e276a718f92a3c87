"""Dream with the real merge path (10a case 4, spec 05.2): the Dreamer ``oharness serve``
installs, through a live daemon on loopback; with sync on, merges commit to a live sync server
first."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from daemon_support import CLIENT, LiveDaemon, events_until, live_daemon, wait_terminal
from sync_server_support import LiveServer, make_settings, token_for

from oharness.daemon import DaemonOptions
from oharness.daemon.tasks.dream import ReviewDreamer
from oharness.daemon.tasks.lane import CancelToken, TaskCancelled
from oharness.memory.workspace import Workspace, open_workspace
from oharness.sdk import AsyncDaemonClient, DaemonClient, DaemonError
from oharness.server.app import create_app
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import SyncService, sync_targets

PORTS = range(18900, 19000)


def port_in_range() -> int:
    for port in PORTS:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 18900-18999")


class Clock:
    def __init__(self) -> None:
        self.now = 1_789_000_000_000

    def __call__(self) -> int:
        self.now += 1000
        return self.now


def _workspace(project: Path, home: Path, clock: Clock) -> Workspace:
    return open_workspace(project, home, register=True, clock=clock)


def _plant(project: Path, home: Path, clock: Clock) -> dict[str, str]:
    """A same-topic pair in each scope, a note linking to the younger project one, and an
    unrelated note."""
    service = _workspace(project, home, clock).service
    ids = {
        "old": service.remember(
            "Pricing cards use fills, not borders", "Fills, said the designer.", tags="design"
        ).id,
        "young": service.remember(
            "Pricing cards: fill instead of borders", "No borders on cards.", tags="design"
        ).id,
        "unrelated": service.remember("Deploys happen on Tuesdays", "Release train.").id,
    }
    ids["linker"] = service.remember(
        "Design review checklist", f"Card styling: see [[{ids['young']}]]."
    ).id
    ids["user_old"] = service.remember(
        "Prefers tabs over spaces in Python code",
        "Tabs, always.",
        tags="style",
        scope="user",
        type="user",
    ).id
    ids["user_young"] = service.remember(
        "Prefers tabs instead of spaces in Python code",
        "Said so again.",
        tags="style",
        scope="user",
        type="user",
    ).id
    return ids


@contextlib.contextmanager
def _running(daemon: LiveDaemon) -> Iterator[LiveDaemon]:
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path, Clock, dict[str, str]]:
    project, home, clock = tmp_path / "project", tmp_path / "home", Clock()
    project.mkdir()
    return project, home, clock, _plant(project, home, clock)


def _daemon(project: Path, home: Path, clock: Clock, **dreamer: Any) -> LiveDaemon:
    options = DaemonOptions(
        home=home,
        start=project,
        clock=clock,
        dreamer=ReviewDreamer(clock=clock, **dreamer),
        background_sync=False,
    )
    return LiveDaemon(options, port=port_in_range()).start()


def test_dream_merges_each_scope_through_the_merge_path(
    planted: tuple[Path, Path, Clock, dict[str, str]],
) -> None:
    project, home, clock, ids = planted
    with _running(_daemon(project, home, clock)) as daemon, daemon.client() as http:
        assert http.get("/capabilities").json()["capabilities"]["workspace_memory_dream"] == {
            "since": "v1"
        }
        with (
            daemon.client() as listener,
            listener.stream("GET", "/events") as stream,
        ):
            lines = stream.iter_lines()
            assert next(lines).startswith(": connected")
            first = http.post("/workspace/memory/dream", headers={CLIENT: "ui"}).json()
            done = wait_terminal(http, "dream", first["taskId"], headers={CLIENT: "ui"})
            again = http.post("/workspace/memory/dream", json={}).json()
            second = wait_terminal(http, "dream", again["taskId"])
            sentinel = http.post(
                "/workspace/memory/remember",
                json={"content": "The office plant is watered on Mondays.", "contextMode": "clean"},
            ).json()["taskId"]
            events = events_until(lines, sentinel)

    assert done["status"] == "completed", done
    result = done["result"]
    assert result["touchedScopes"] == ["project", "user"]
    by_scope = {entry["scope"]: entry for entry in result["dedupedEntries"]}
    assert set(by_scope) == {"project", "user"} and len(result["dedupedEntries"]) == 2
    project_entry, user_entry = by_scope["project"], by_scope["user"]
    assert project_entry["id"] == ids["old"] and project_entry["removedIds"] == [ids["young"]]
    assert project_entry["relinkedIds"] == [ids["linker"]]
    assert project_entry["summary"] == "Pricing cards use fills, not borders"
    assert Path(project_entry["filePath"]) == project / "MEMORY" / f"{ids['old']}.md"
    assert user_entry["id"] == ids["user_old"] and user_entry["removedIds"] == [ids["user_young"]]
    assert result["refusedEntries"] == []
    assert "Merged 2 same-topic groups" in result["summary"]

    workspace = _workspace(project, home, clock)
    notes = workspace.service.store("project")
    kept = notes.get(ids["old"])
    assert kept is not None
    assert (
        "Fills, said the designer." in kept.note.body and "No borders on cards." in kept.note.body
    )
    assert notes.get(ids["young"]) is None
    linker = notes.get(ids["linker"])
    assert linker is not None and f"[[{ids['old']}]]" in linker.note.body
    assert ids["young"] not in linker.note.body
    assert notes.get(ids["unrelated"]) is not None
    user_kept = workspace.service.store("user").get(ids["user_old"])
    assert user_kept is not None and "Said so again." in user_kept.note.body
    assert workspace.service.store("user").get(ids["user_young"]) is None
    merge_backups = {r.note_id for r in workspace.service.backups().recent() if r.reason == "merge"}
    assert {ids["old"], ids["young"], ids["linker"], ids["user_old"], ids["user_young"]} <= (
        merge_backups
    )

    assert second["status"] == "completed"
    assert second["result"]["dedupedEntries"] == [] and second["result"]["touchedScopes"] == []
    assert second["result"]["summary"] == "Nothing to merge: no notes on the same topic"
    dream_events = [
        e
        for e in events
        if e["type"] == "memory_changed" and e["data"]["source"] == "workspace_memory_dream"
    ]
    assert len(dream_events) == 1
    (event,) = dream_events
    assert event["data"]["taskId"] == first["taskId"] and event["originatorClientId"] == "ui"
    assert event["data"]["touchedScopes"] == ["project", "user"]


def test_a_refused_merge_is_reported_and_the_others_go_on(
    planted: tuple[Path, Path, Clock, dict[str, str]],
) -> None:
    project, home, clock, ids = planted
    (project / ".oharness" / "config.json").write_text(
        json.dumps({"memory": {"maxNoteBytes": 1024}})
    )
    service = _workspace(project, home, clock).service
    service.remember(
        "Pricing cards use fills, not borders", "Fills. " * 100, id=ids["old"], tags="design"
    )
    service.remember(
        "Pricing cards: fill instead of borders", "Borders. " * 90, id=ids["young"], tags="design"
    )
    before = {p.name: p.read_bytes() for p in (project / "MEMORY").glob("*.md")}
    with (
        _running(_daemon(project, home, clock)) as daemon,
        DaemonClient(daemon.url, daemon.token, client_id="sdk") as sdk,
    ):
        task = sdk.dream_workspace_memory()
        assert task["taskId"].startswith("dream-")
        done = sdk.wait(task)
        assert sdk.get_workspace_memory_dream_task(task["taskId"])["status"] == "completed"
    result = done["result"]
    assert result["touchedScopes"] == ["user"]
    assert [entry["id"] for entry in result["dedupedEntries"]] == [ids["user_old"]]
    (refused,) = result["refusedEntries"]
    assert refused["scope"] == "project" and set(refused["notes"]) == {ids["old"], ids["young"]}
    assert "not merged" in result["summary"] and ids["old"] in result["summary"]
    after = {p.name: p.read_bytes() for p in (project / "MEMORY").glob("*.md")}
    assert after == before  # the refused merge changed nothing


def test_a_daemon_without_a_dreamer_still_refuses_cleanly(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    options = DaemonOptions(home=tmp_path / "home", start=project, background_sync=False)
    with live_daemon(options) as daemon, daemon.client() as http:
        assert "workspace_memory_dream" not in http.get("/capabilities").json()["capabilities"]
        task_id = http.post("/workspace/memory/dream").json()["taskId"]
        done = wait_terminal(http, "dream", task_id)
        assert done["error"]["code"] == "dream_failed"


def test_serve_installs_the_review_dreamer(tmp_path: Path) -> None:
    import subprocess
    import sys

    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    oharness = Path(sys.executable).with_name("oharness")
    port = port_in_range()
    process = subprocess.Popen(
        [str(oharness), "serve", "--port", str(port), "--project", str(project)],
        env={"OHARNESS_HOME": str(home), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (home / "daemon-token").exists():
            assert process.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.05)
        token = (home / "daemon-token").read_text().strip()
        while True:
            try:
                with DaemonClient(f"http://127.0.0.1:{port}", token) as sdk:
                    caps = sdk.capabilities()["capabilities"]
                    done = sdk.wait(sdk.dream_workspace_memory())
                break
            except DaemonError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert caps["workspace_memory_dream"] == {"since": "v1"}
        assert done["status"] == "completed", done
        assert done["result"]["dedupedEntries"] == []
    finally:
        process.terminate()
        process.wait(timeout=20)


def _server_notes(server: LiveServer, token: str, scope: dict[str, str]) -> dict[str, str]:
    with httpx2.Client(timeout=30) as http:
        response = http.post(
            server.url + "/v1/memory/snapshot",
            headers={"Authorization": f"Bearer {token}"},
            json={"protocol": 2, "scope": scope},
        )
    assert response.status_code == 200, response.text
    return {entry["id"]: entry["hash"] for entry in response.json()["notes"]}


def test_with_sync_on_each_merge_is_committed_to_the_cloud_first(
    planted: tuple[Path, Path, Clock, dict[str, str]],
) -> None:
    project, home, clock, ids = planted
    server = LiveServer(
        create_app(MemoryObjectStore(), make_settings()), port=port_in_range()
    ).start()
    token = token_for("alice", plan="paid")
    try:
        workspace = _workspace(project, home, clock)
        SyncSettingsFile(workspace.home).login(server.url, token)
        with httpx2.Client(timeout=30) as http:
            sync = SyncService(
                workspace.home, backups=workspace.service.backups(), clock=clock, http=http
            )
            for target in sync_targets(workspace):
                report = sync.run(target)
                assert report.error is None and not report.paused, report
        assert workspace.project is not None and workspace.project.identity is not None
        scope = {"kind": "project", "projectId": workspace.project.identity.id}
        assert ids["young"] in _server_notes(server, token, scope)
        with _running(_daemon(project, home, clock)) as daemon, daemon.client() as client:
            task_id = client.post("/workspace/memory/dream").json()["taskId"]
            done = wait_terminal(client, "dream", task_id, timeout=60)
        assert done["status"] == "completed", done
        entries = {entry["scope"]: entry for entry in done["result"]["dedupedEntries"]}
        assert set(entries) == {"project", "user"}
        assert all(isinstance(entry["committedVersion"], int) for entry in entries.values())
        cloud = _server_notes(server, token, scope)
        assert ids["young"] not in cloud
        kept = _workspace(project, home, clock).service.store("project").get(ids["old"])
        assert kept is not None and cloud[ids["old"]] == kept.note.content_hash
        linker = _workspace(project, home, clock).service.store("project").get(ids["linker"])
        assert linker is not None and cloud[ids["linker"]] == linker.note.content_hash
        user_cloud = _server_notes(server, token, {"kind": "user"})
        assert ids["user_young"] not in user_cloud and ids["user_old"] in user_cloud
    finally:
        server.stop()


def test_with_the_sync_server_unreachable_every_merge_is_refused_unchanged(
    planted: tuple[Path, Path, Clock, dict[str, str]],
) -> None:
    project, home, clock, ids = planted
    workspace = _workspace(project, home, clock)
    closed = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # bound, never listening
    closed.bind(("127.0.0.1", port_in_range()))
    origin = f"http://127.0.0.1:{closed.getsockname()[1]}"
    SyncSettingsFile(workspace.home).login(origin, token_for("bob"))
    folders = (project / "MEMORY", workspace.home.user_memory_dir)
    before = {p: p.read_bytes() for folder in folders for p in folder.glob("*.md")}
    with _running(_daemon(project, home, clock)) as daemon, daemon.client() as client:
        task_id = client.post("/workspace/memory/dream").json()["taskId"]
        done = wait_terminal(client, "dream", task_id, timeout=60)
    assert done["status"] == "completed", done
    result = done["result"]
    assert result["dedupedEntries"] == [] and result["touchedScopes"] == []
    assert {entry["scope"] for entry in result["refusedEntries"]} == {"project", "user"}
    assert "must be synced before a merge" in result["refusedEntries"][0]["reason"]
    assert "2 groups not merged" in result["summary"]
    assert {p: p.read_bytes() for folder in folders for p in folder.glob("*.md")} == before
    assert ids["young"] in {p.stem for p in before}
    closed.close()


class CancelAfter(CancelToken):
    """Cancelled at its ``calls``-th check, as a timeout between two merges would."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.left = calls

    def check(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.cancel()
        super().check()


def test_a_cancel_stops_the_dream_between_merges(
    planted: tuple[Path, Path, Clock, dict[str, str]],
) -> None:
    project, home, clock, ids = planted
    workspace = _workspace(project, home, clock)
    with pytest.raises(TaskCancelled):
        ReviewDreamer(clock=clock).dream(workspace, CancelAfter(1))
    assert workspace.service.store("project").get(ids["young"]) is not None  # nothing merged
    with pytest.raises(TaskCancelled):  # before the group, before its apply, before the next
        ReviewDreamer(clock=clock).dream(workspace, CancelAfter(3))
    fresh = _workspace(project, home, clock).service
    assert fresh.store("project").get(ids["young"]) is None  # the first merge was applied
    assert fresh.store("user").get(ids["user_young"]) is not None  # the second never started


def test_the_async_sdk_dream_pair(planted: tuple[Path, Path, Clock, dict[str, str]]) -> None:
    project, home, clock, ids = planted

    async def dream(daemon: LiveDaemon) -> tuple[dict[str, Any], dict[str, Any]]:
        async with AsyncDaemonClient(daemon.url, daemon.token, client_id="async") as sdk:
            task = await sdk.dream_workspace_memory()
            done = await sdk.wait(task)
            polled = await sdk.get_workspace_memory_dream_task(task["taskId"])
            return done, polled

    with _running(_daemon(project, home, clock)) as daemon:
        done, polled = asyncio.run(dream(daemon))
    assert done["status"] == polled["status"] == "completed"
    assert {entry["id"] for entry in done["result"]["dedupedEntries"]} == {
        ids["old"],
        ids["user_old"],
    }
