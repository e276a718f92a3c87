"""The sync service around a pass: chunking, large pulls, old servers, plan limits, case
collisions, copied and moved folders, 429 deadlines, erased accounts (spec 07)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from starlette.testclient import TestClient
from syncharness import PROJECT_ID, SECRET, Clock

from oharness.memory.workspace import Workspace, open_workspace
from oharness.server.app import create_app
from oharness.server.config import JwtSettings, ServerSettings
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.protocol import PlanLimits, Quotas
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import PassReport, SyncService, sync_targets

ORIGIN = "http://sync.test"
ADMIN = "admin-key-0123456789abcdef0123456789"


def _token(user: str = "alice", plan: str = "paid") -> str:
    payload = {"sub": user, "exp": int(time.time()) + 3600, "ent": {"plan": plan}}
    return jwt.encode(payload, SECRET, algorithm="HS256")


class World:
    def __init__(self, tmp: Path, **settings: Any) -> None:
        self.tmp = tmp
        self.clock = Clock()
        self.store = MemoryObjectStore()
        options: dict[str, Any] = {
            "jwt": JwtSettings(secret=SECRET),
            "rate_per_minute": 0,
            "admin_key": ADMIN,
            **settings,
        }
        self.app = create_app(self.store, ServerSettings(**options), clock=self.clock)
        self.http = TestClient(self.app, base_url=ORIGIN)

    def device(self, name: str, *, user: str = "alice", plan: str = "paid") -> Device:
        return Device(self, self.tmp / name, user, plan)


class Device:
    def __init__(self, world: World, root: Path, user: str, plan: str) -> None:
        self.world = world
        self.root = root / "repo"
        self.home = root / "home"
        (self.root / ".oharness").mkdir(parents=True)
        (self.root / ".oharness" / "project.json").write_text(
            json.dumps({"id": PROJECT_ID, "createdAt": 1})
        )
        self.home.mkdir(parents=True)
        self.login(user, plan)

    def login(self, user: str, plan: str = "paid") -> None:
        layout = open_workspace(self.root, self.home, register=True).home
        SyncSettingsFile(layout).login(ORIGIN, _token(user, plan))

    @property
    def ws(self) -> Workspace:
        return open_workspace(self.root, self.home, register=True, clock=self.world.clock)

    def service(self, ws: Workspace) -> SyncService:
        return SyncService(
            ws.home, backups=ws.service.backups(), clock=self.world.clock, http=self.world.http
        )

    def sync(self) -> dict[str, PassReport]:
        ws = self.ws
        service = self.service(ws)
        return {target.scope: service.run(target) for target in sync_targets(ws)}

    def status(self) -> dict[str, Any]:
        ws = self.ws
        service = self.service(ws)
        return {target.scope: service.status(target) for target in sync_targets(ws)}


def _remember(device: Device, summary: str, body: str = "body\n", **kwargs: Any) -> str:
    return device.ws.service.remember(summary, body, **kwargs).id


def test_commits_are_chunked_by_max_changes_per_commit(tmp_path: Path) -> None:
    world = World(tmp_path, quotas=Quotas(max_changes_per_commit=2))
    a, b = world.device("a"), world.device("b")
    ids = [_remember(a, f"Note number {n}", f"body {n}\n") for n in range(5)]
    result = a.sync()["project"].result
    assert result is not None and sorted(result.pushed) == sorted(ids)
    pulled = b.sync()["project"].result
    assert pulled is not None and sorted(pulled.pulled) == sorted(ids)


def test_a_large_pull_continues_with_pending(tmp_path: Path) -> None:
    world = World(tmp_path, quotas=Quotas(max_response_bytes=600))
    a, b = world.device("a"), world.device("b")
    ids = [_remember(a, f"Long note {n}", f"{n} " + "x" * 300 + "\n") for n in range(6)]
    a.sync()
    pulled = b.sync()["project"].result
    assert pulled is not None and sorted(pulled.pulled) == sorted(ids)
    assert b.sync()["project"].result.pulled == []  # type: ignore[union-attr]


def test_an_old_server_syncs_untyped_project_notes_only(tmp_path: Path) -> None:
    world = World(tmp_path, protocols=(1,))
    a, b = world.device("a"), world.device("b")
    plain = _remember(a, "Untyped note")
    typed = _remember(a, "Typed note", type="project")
    _remember(a, "User note", type="user")
    reports = a.sync()
    assert reports["user"].paused and "older than this client" in reports["user"].paused
    project = reports["project"].result
    assert project is not None and project.pushed == [plain]
    assert f"{typed}.md" in project.unsyncable
    assert b.sync()["project"].result.pulled == [plain]  # type: ignore[union-attr]


def test_free_plan_limit_keeps_every_local_note_and_says_why(tmp_path: Path) -> None:
    world = World(tmp_path, free_plan_limits=PlanLimits(max_notes=2))
    a = world.device("a", plan="free")
    ids = [_remember(a, f"Free note {n}") for n in range(3)]
    report = a.sync()["project"]
    assert report.result is not None
    assert len(report.result.pushed) == 2
    assert [item["reason"] for item in report.result.rejected] == ["plan_limit"]
    assert all((a.root / "MEMORY" / f"{note_id}.md").exists() for note_id in ids)
    status = a.status()["project"]
    assert status["lastError"]["code"] == "plan_limit"
    assert status["planLimits"] == {"maxNotes": 2, "maxBodyBytes": None}


def test_ids_differing_only_by_case_are_refused_before_upload(tmp_path: Path) -> None:
    world = World(tmp_path)
    a, b = world.device("a"), world.device("b")
    note_id = _remember(a, "Shared id")
    a.sync()
    upper = note_id.upper()
    text = (a.root / "MEMORY" / f"{note_id}.md").read_text().replace(note_id, upper)
    b.ws.service.store("project").save_bytes(upper, text.encode(), create=True)
    result = b.sync()["project"].result
    assert result is not None and upper not in result.pushed
    refused = [item for item in result.rejected if item["id"] == upper]
    assert refused and refused[0]["reason"] == "case_collision"
    assert "only by letter case" in refused[0]["message"]


def test_a_copied_folder_is_paused_and_a_moved_one_followed(tmp_path: Path) -> None:
    world = World(tmp_path)
    a = world.device("a")
    _remember(a, "Original note")
    a.sync()
    copy = tmp_path / "copy"
    shutil.copytree(a.root, copy)
    original_root = a.root
    a.root = copy
    report = a.sync()["project"]
    assert report.paused and "project reset-id" in report.paused
    moved = tmp_path / "moved"
    shutil.rmtree(copy)
    original_root.rename(moved)
    a.root = moved
    followed = a.sync()["project"]
    assert followed.paused is None and followed.result is not None


def test_another_account_pauses_the_scope(tmp_path: Path) -> None:
    world = World(tmp_path)
    a = world.device("a")
    _remember(a, "Alice's note")
    a.sync()
    a.login("bob")
    report = a.sync()["project"]
    assert report.paused and "another account" in report.paused


def test_a_429_deadline_is_kept_across_restarts(tmp_path: Path) -> None:
    world = World(tmp_path, rate_per_minute=1)
    a = world.device("a")
    _remember(a, "Rate limited")
    reports = a.sync()  # identity + snapshot + commit: over one request a minute
    errors = [r.error for r in reports.values() if r.error]
    assert errors and "too frequent" in errors[0]["message"]
    later = a.sync()["project"]  # a new service (as after a restart) still waits
    assert later.paused and "too frequent" in later.paused
    assert a.status()["project"]["retryAfter"] > world.clock.now


def test_an_erased_account_stops_sync_and_keeps_local_notes(tmp_path: Path) -> None:
    world = World(tmp_path)
    a = world.device("a")
    note_id = _remember(a, "Keep me locally")
    a.sync()
    erased = world.http.post(
        "/v1/admin/erase", json={"userId": "alice"}, headers={"Authorization": f"Bearer {ADMIN}"}
    )
    assert erased.status_code == 200
    _remember(a, "Written after the erase")
    report = a.sync()["project"]
    assert report.paused and "erased" in report.paused
    assert (a.root / "MEMORY" / f"{note_id}.md").exists()
    assert a.sync()["project"].paused  # final: no more requests for that account


@pytest.mark.parametrize("scope", ["project", "user"])
def test_nothing_changed_is_one_request(tmp_path: Path, scope: str) -> None:
    world = World(tmp_path)
    a = world.device("a")
    _remember(a, "Quiet note", type="user" if scope == "user" else None)
    a.sync()
    calls: list[str] = []
    original = world.http.request

    def counting(method: str, url: Any, **kwargs: Any) -> Any:
        calls.append(str(url))
        return original(method, url, **kwargs)

    world.http.request = counting  # type: ignore[method-assign]
    reports = a.sync()
    assert reports[scope].result is not None
    assert len([url for url in calls if "/snapshot" in url]) == 2  # one per scope
    assert len(calls) == 2


def test_an_upgraded_server_is_used_without_signing_in_again(tmp_path: Path) -> None:
    world = World(tmp_path, protocols=(1,))
    a = world.device("a")
    plain = _remember(a, "Untyped note")
    typed = _remember(a, "Typed note", type="project")
    user = _remember(a, "User note", type="user")
    reports = a.sync()
    assert reports["user"].paused and reports["project"].failed
    # The operator upgrades the server (same storage); the next pass notices, at once.
    world.app = create_app(
        world.store,
        ServerSettings(jwt=JwtSettings(secret=SECRET), rate_per_minute=0, admin_key=ADMIN),
        clock=world.clock,
    )
    world.http = TestClient(world.app, base_url=ORIGIN)
    reports = a.sync()
    project, mine = reports["project"].result, reports["user"].result
    assert project is not None and mine is not None and not reports["project"].failed
    assert project.pushed == [typed] and mine.pushed == [user]
    b = world.device("b")
    assert sorted(b.sync()["project"].result.pulled) == sorted([plain, typed])  # type: ignore[union-attr]
