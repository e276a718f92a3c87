"""Two machines of one account syncing one project through a live server on loopback."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx2
from sync_server_support import LiveServer, token_for

from oharness.memory.workspace import Workspace, open_workspace
from oharness.review import ReviewService, open_review
from oharness.sync.batch import CommitFirst
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import PassReport, SyncService, sync_targets

PROJECT_ID = "git-5f0c0123456789abcdef0123456789abcdef0123"
PORTS = range(18500, 18600)


def loopback_port() -> int:
    """A free port in this suite's range."""
    for port in PORTS:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 18500-18599")


class Clock:
    def __init__(self) -> None:
        self.now = 1_789_000_000_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


class Machine:
    """One home and one checkout of the project, signed in to the live server."""

    def __init__(self, root: Path, server: LiveServer, clock: Clock, plan: str = "paid") -> None:
        self.root = root / "repo"
        self.home = root / "home"
        self.clock = clock
        self.http = httpx2.Client(timeout=30)
        (self.root / ".oharness").mkdir(parents=True)
        (self.root / ".oharness" / "project.json").write_text(
            json.dumps({"id": PROJECT_ID, "createdAt": 1})
        )
        self.home.mkdir(parents=True)
        SyncSettingsFile(self.ws.home).login(server.url, token_for("alice", plan=plan))

    @property
    def ws(self) -> Workspace:
        return open_workspace(self.root, self.home, register=True, clock=self.clock)

    def sync_service(self, ws: Workspace) -> SyncService:
        return SyncService(ws.home, backups=ws.service.backups(), clock=self.clock, http=self.http)

    def sync(self) -> dict[str, PassReport]:
        ws = self.ws
        service = self.sync_service(ws)
        return {target.scope: service.run(target) for target in sync_targets(ws)}

    def review(self, ws: Workspace | None = None) -> ReviewService:
        ws = ws or self.ws
        service = self.sync_service(ws)
        targets = {target.scope: target for target in sync_targets(ws)}
        return open_review(ws, clock=self.clock, committer=CommitFirst(service, targets))

    def files(self) -> dict[str, str]:
        folder = self.root / "MEMORY"
        return {p.stem: p.read_text() for p in sorted(folder.glob("*.md"))}

    def close(self) -> None:
        self.http.close()


def server_notes(server: LiveServer) -> dict[str, Any]:
    """The project's live notes on the server, by id (rev and hash)."""
    with httpx2.Client(timeout=30) as http:
        response = http.post(
            server.url + "/v1/memory/snapshot",
            headers={"Authorization": f"Bearer {token_for('alice', plan='paid')}"},
            json={"protocol": 2, "scope": {"kind": "project", "projectId": PROJECT_ID}},
        )
    data = response.json()
    return {entry["id"]: entry["hash"] for entry in data["notes"]}
