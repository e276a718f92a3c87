"""The sync library calls the CLI, the daemon and the Memory page share (``sync.actions``)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from syncharness import PROJECT_ID, Clock, Server, token

from oharness.errors import SyncError, UnavailableError, ValidationError
from oharness.memory.workspace import Workspace, open_workspace
from oharness.project.paths import HomeLayout
from oharness.sync import actions
from oharness.sync.sync_service import PassReport, SyncService, SyncTarget

ORIGIN = "http://sync.test"


class Device:
    def __init__(self, root: Path, server: Server, clock: Clock) -> None:
        self.root, self.home, self.server, self.clock = root / "repo", root / "home", server, clock
        (self.root / ".oharness").mkdir(parents=True)
        (self.root / ".oharness" / "project.json").write_text(
            json.dumps({"id": PROJECT_ID, "createdAt": 1})
        )
        self.home.mkdir(parents=True)

    @property
    def layout(self) -> HomeLayout:
        return HomeLayout(self.home)

    def ws(self) -> Workspace:
        return open_workspace(self.root, self.home, register=True, clock=self.clock)

    def login(self, user: str = "alice") -> actions.SignIn:
        return actions.login(self.layout, ORIGIN + "/", token(user), http=self.server.http)

    def sync(self) -> tuple[Workspace, SyncService, list[SyncTarget]]:
        ws = self.ws()
        service, targets = actions.workspace_sync(ws, clock=self.clock, http=self.server.http)
        return ws, service, targets


@pytest.fixture
def server() -> Server:
    return Server(Clock())


def _device(tmp_path: Path, name: str, server: Server) -> Device:
    return Device(tmp_path / name, server, server.clock)


def test_login_checks_the_token_before_saving_anything(tmp_path: Path, server: Server) -> None:
    device = _device(tmp_path, "a", server)
    with pytest.raises(SyncError, match="sign-in failed, nothing saved"):
        actions.login(device.layout, ORIGIN, "not-a-token", http=server.http)
    assert not (device.home / "credentials.json").exists()
    assert not device.layout.cloud_file.exists()
    signed = device.login("alice")
    assert (signed.origin, signed.user_id, signed.plan) == (ORIGIN, "alice", "paid")
    assert signed.to_json() == {
        "origin": ORIGIN,
        "userId": "alice",
        "plan": "paid",
        "needsUnlock": False,
    }
    assert signed.sync_enabled
    credentials = device.home / "credentials.json"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert json.loads(credentials.read_text())["token"] == token("alice")
    assert json.loads(device.layout.cloud_file.read_text())["origin"] == ORIGIN


def test_a_token_from_the_environment_is_not_stored(tmp_path: Path, server: Server) -> None:
    device = _device(tmp_path, "a", server)
    actions.login(device.layout, ORIGIN, token("alice"), store_token=False, http=server.http)
    assert not (device.home / "credentials.json").exists()
    assert json.loads(device.layout.cloud_file.read_text())["origin"] == ORIGIN


def test_an_origin_that_is_not_http_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="must be an http:// or https:// URL"):
        actions.login(HomeLayout(tmp_path), "ftp://sync.test", "t")
    assert actions.check_origin("https://sync.test//") == "https://sync.test"
    assert not (tmp_path / "cloud.json").exists()


def test_logout_forgets_the_token_once(tmp_path: Path, server: Server) -> None:
    device = _device(tmp_path, "a", server)
    device.login()
    assert actions.logout(device.layout) is True
    assert actions.logout(device.layout) is False
    assert not (device.home / "credentials.json").exists()
    assert json.loads(device.layout.cloud_file.read_text())["origin"] == ORIGIN


def test_sync_now_pushes_and_the_status_follows(tmp_path: Path, server: Server) -> None:
    a, b = _device(tmp_path, "a", server), _device(tmp_path, "b", server)
    a.login(), b.login()
    note_id = a.ws().service.remember("Shared note", "line\n").id
    _, service, targets = a.sync()
    before = actions.sync_status(service, targets)
    assert before["lastSyncedAt"] is None
    outcome = actions.sync_now(service, targets)
    assert not outcome.failed
    project = next(r for r in outcome.reports if r.target.scope == "project")
    assert project.result is not None and project.result.pushed == [note_id]
    assert outcome.status["lastSyncedAt"] is not None
    assert [p["scope"] for p in outcome.passes_json()] == ["project", "user"]
    _, service_b, targets_b = b.sync()
    pulled = actions.sync_now(service_b, targets_b).reports[0].result
    assert pulled is not None and pulled.pulled == [note_id]


def test_sync_now_goes_through_a_given_runner(tmp_path: Path, server: Server) -> None:
    a = _device(tmp_path, "a", server)
    a.login()
    _, service, targets = a.sync()
    seen: list[str] = []

    def run(target: SyncTarget) -> list[PassReport]:
        seen.append(target.scope)
        return [PassReport(target, paused="held by the test")]

    outcome = actions.sync_now(service, targets, run=run)
    assert seen == ["project", "user"]
    assert [r.paused for r in outcome.reports] == ["held by the test"] * 2
    assert not outcome.failed


def test_switched_off_sync_now_is_paused(tmp_path: Path, server: Server) -> None:
    a = _device(tmp_path, "a", server)
    a.login()
    actions.set_sync_enabled(a.layout, False)
    _, service, targets = a.sync()
    outcome = actions.sync_now(service, targets)
    assert all(r.paused and "switched off" in r.paused for r in outcome.reports)
    assert actions.sync_status(service, targets)["enabled"] is False
    actions.set_sync_enabled(a.layout, True)
    assert actions.sync_status(service, targets)["enabled"] is True


def _conflict(tmp_path: Path, server: Server) -> tuple[Device, Device, str]:
    a, b = _device(tmp_path, "a", server), _device(tmp_path, "b", server)
    a.login(), b.login()
    note_id = a.ws().service.remember("Shared", "line one\n").id
    actions.sync_now(*a.sync()[1:]), actions.sync_now(*b.sync()[1:])
    a.ws().service.remember("Shared", "line one from a\n", id=note_id)
    b.ws().service.remember("Shared", "line one from b\n", id=note_id)
    actions.sync_now(*a.sync()[1:])
    result = actions.sync_now(*b.sync()[1:]).reports[0].result
    assert result is not None and result.conflicts == [note_id]
    return a, b, note_id


def test_a_conflict_is_listed_found_and_resolved(tmp_path: Path, server: Server) -> None:
    a, b, note_id = _conflict(tmp_path, server)
    ws, service, targets = b.sync()
    found = actions.list_conflicts(service, targets)
    assert [(item["id"], item["scope"]) for item in found] == [(note_id, "project")]
    assert "from b" in found[0]["local"] and "from a" in found[0]["cloud"]
    with pytest.raises(ValidationError, match="no open conflict"):
        actions.conflict_target(service, targets, note_id, "user")
    with pytest.raises(ValidationError, match="'x' lists them"):
        actions.conflict_target(service, targets, "other-id", None, hint="'x' lists them")
    target = actions.conflict_target(service, targets, note_id, None)
    assert target.scope == "project"
    resolution = actions.resolve_conflict(
        service, target, ws.service.backups(), note_id, keep="local", text=None, clock=b.clock
    )
    data = actions.resolution_json(resolution)
    assert data["id"] == note_id and data["keep"] == "local" and len(data["backups"]) == 1
    assert actions.list_conflicts(service, targets) == []
    pushed = actions.sync_now(service, targets).reports[0].result
    assert pushed is not None and pushed.pushed == [note_id]
    actions.sync_now(*a.sync()[1:])
    assert "from b" in (a.root / "MEMORY" / f"{note_id}.md").read_text()


def test_resolve_needs_exactly_one_choice_and_changes_nothing_otherwise(
    tmp_path: Path, server: Server
) -> None:
    _, b, note_id = _conflict(tmp_path, server)
    ws, service, targets = b.sync()
    target = actions.conflict_target(service, targets, note_id, None)
    backups_before = ws.service.backups().recent()
    choices: list[tuple[actions.Keep | None, str | None]] = [("local", "a body\n"), (None, None)]
    for keep, text in choices:
        with pytest.raises(ValidationError, match="exactly one"):
            actions.resolve_conflict(
                service, target, ws.service.backups(), note_id, keep=keep, text=text, clock=b.clock
            )
    assert [item["id"] for item in actions.list_conflicts(service, targets)] == [note_id]
    assert ws.service.backups().recent() == backups_before


def test_a_scope_that_is_not_here_says_why(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    ws = open_workspace(plain, tmp_path / "home", register=False)
    _, targets = actions.workspace_sync(ws, clock=lambda: 1)
    assert [t.scope for t in targets] == ["user"]
    assert actions.target_for(ws, targets, "user").scope == "user"
    with pytest.raises(UnavailableError, match="project init"):
        actions.target_for(ws, targets, "project")
