"""Machines that sync through one in-process server: separate homes, one project id."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from starlette.testclient import TestClient

from oharness.memory.workspace import Workspace, open_workspace
from oharness.server.app import create_app
from oharness.server.config import JwtSettings, ServerSettings
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.ancestor import AncestorStore
from oharness.sync.client import SyncClient
from oharness.sync.protocol import Quotas, SyncScope
from oharness.sync.scope_sync import PassResult, ScopeSync
from oharness.types import Scope

SECRET = "sync-test-secret-0123456789abcdef0123456789"
PROJECT_ID = "git-0123456789abcdef0123456789abcdef01234567"


class Clock:
    def __init__(self) -> None:
        self.now = 1_789_000_000_000

    def __call__(self) -> int:
        self.now += 1
        return self.now

    def advance_days(self, days: float) -> None:
        self.now += int(days * 86_400_000)


def token(user: str) -> str:
    payload = {"sub": user, "exp": int(time.time()) + 3600, "ent": {"plan": "paid"}}
    return jwt.encode(payload, SECRET, algorithm="HS256")


class Server:
    def __init__(self, clock: Clock, **quotas: Any) -> None:
        self.store = MemoryObjectStore()
        self.clock = clock
        settings = ServerSettings(
            jwt=JwtSettings(secret=SECRET), quotas=Quotas(**quotas), rate_per_minute=0
        )
        self.app = create_app(self.store, settings, clock=clock, sleep=lambda _: None)
        self.http = TestClient(self.app, base_url="http://sync.test")


@dataclass
class Machine:
    name: str
    root: Path
    home: Path
    server: Server
    clock: Clock
    user: str = "alice"

    def __post_init__(self) -> None:
        (self.root / ".oharness").mkdir(parents=True, exist_ok=True)
        (self.root / ".oharness" / "project.json").write_text(
            json.dumps({"id": PROJECT_ID, "createdAt": 1})
        )
        self.home.mkdir(parents=True, exist_ok=True)

    @property
    def ws(self) -> Workspace:
        return open_workspace(self.root, self.home, register=True, clock=self.clock)

    def sync(self, scope: Scope = "project", **quota_overrides: Any) -> PassResult:
        ws = self.ws
        key = ws.service.scope_key(scope)
        engine = ScopeSync(
            store=ws.service.store(scope),
            base=AncestorStore(self.home / "memory-sync", key),
            client=SyncClient("http://sync.test", token(self.user), http=self.server.http),
            scope=SyncScope("project", PROJECT_ID) if scope == "project" else SyncScope("user"),
            scope_key=key,
            backups=ws.service.backups(),
            clock=self.clock,
        )
        return engine.run()

    def notes_dir(self, scope: Scope = "project") -> Path:
        return self.root / "MEMORY" if scope == "project" else self.home / "memory" / "user"

    def files(self, scope: Scope = "project") -> dict[str, str]:
        folder = self.notes_dir(scope)
        return (
            {p.stem: p.read_text() for p in sorted(folder.glob("*.md"))} if folder.exists() else {}
        )

    def base(self, scope: Scope = "project") -> AncestorStore:
        return AncestorStore(self.home / "memory-sync", self.ws.service.scope_key(scope))


def resolver(machine: Machine, scope: Scope = "project") -> Any:
    from oharness.sync.resolve import ConflictResolver

    ws = machine.ws
    return ConflictResolver(
        store=ws.service.store(scope),
        base=machine.base(scope),
        backups=ws.service.backups(),
        scope_key=ws.service.scope_key(scope),
        clock=machine.clock,
    )
