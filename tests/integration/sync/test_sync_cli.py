"""Two machines syncing through a real sync server on loopback, driven by the CLI (spec 07, 12)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from repos import git
from sync_support import sync_server_process

OHARNESS = Path(sys.executable).with_name("oharness")
SECRET = "cli-sync-secret-0123456789abcdef0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    storage = tmp_path_factory.mktemp("storage")
    with sync_server_process(
        storage, SECRET, log=storage.parent / "server.log", rate_per_minute=600
    ) as origin:
        yield origin


class Device:
    def __init__(self, root: Path, home: Path) -> None:
        self.root, self.home = root, home

    def run(self, *args: str, input: str = "", **env: str) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, "OHARNESS_HOME": str(self.home), **env}
        environment.pop("OHARNESS_TOKEN", None) if "OHARNESS_TOKEN" not in env else None
        return subprocess.run(
            [str(OHARNESS), *args],
            cwd=self.root,
            input=input,
            capture_output=True,
            text=True,
            env=environment,
            timeout=60,
        )

    def ok(self, *args: str, **env: str) -> str:
        result = self.run(*args, **env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def json(self, *args: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.ok(*args, "--json"))
        return data


@pytest.fixture
def devices(tmp_path: Path, server: str) -> tuple[Device, Device, str]:
    origin_repo = tmp_path / "origin"
    origin_repo.mkdir()
    git(origin_repo, "init", "-q")
    git(origin_repo, "commit", "-q", "--allow-empty", "-m", "root")
    machines = []
    for name in ("a", "b"):
        git(tmp_path, "clone", "-q", str(origin_repo), name)
        machines.append(Device(tmp_path / name, tmp_path / f"home-{name}"))
    a, b = machines
    token = a.ok(
        "sync-server", "token", "--user", "alice", "--plan", "paid", OHARNESS_SYNC_JWT_SECRET=SECRET
    ).strip()
    for device in (a, b):
        device.ok("login", "--origin", server, "--token", token)
    return a, b, token


def test_login_refuses_a_bad_token_and_saves_nothing(tmp_path: Path, server: str) -> None:
    device = Device(tmp_path, tmp_path / "home")
    result = device.run("login", "--origin", server, "--token", "not-a-jwt")
    assert result.returncode == 1 and "sign-in failed" in result.stderr
    assert not (tmp_path / "home" / "credentials.json").exists()


def test_two_clones_sync_notes_both_ways(devices: tuple[Device, Device, str]) -> None:
    a, b, _ = devices
    saved = a.json("memory", "remember", "-s", "Deploys happen on Tuesdays", "-b", "Noon.")
    user = a.json("memory", "remember", "-s", "Prefers terse answers", "-b", "x", "--type", "user")
    assert "project: pushed 1" in a.ok("sync", "now")
    pulled = b.json("sync", "now")
    scopes = {scope["scope"]: scope for scope in pulled["scopes"]}  # type: ignore[union-attr]
    assert scopes["project"]["pulled"] == [saved["id"]]
    assert scopes["user"]["pulled"] == [user["id"]]
    assert (b.root / "MEMORY" / f"{saved['id']}.md").read_bytes() == (
        a.root / "MEMORY" / f"{saved['id']}.md"
    ).read_bytes()
    credentials = a.home / "credentials.json"
    assert oct(credentials.stat().st_mode & 0o777) == "0o600"
    plugins = json.loads((a.home / "plugins.json").read_text())
    (memory,) = plugins["runtimePlugins"]
    targets = memory["config"]["syncTargets"]
    assert {t["userId"] for t in targets.values()} == {"alice"}
    assert "token" not in json.dumps(plugins)
    status = b.json("sync", "status")
    assert status["enabled"] is True and status["lastSyncedAt"]


def test_a_note_forgotten_elsewhere_is_named_in_the_summary(
    devices: tuple[Device, Device, str],
) -> None:
    a, b, _ = devices
    saved = a.json("memory", "remember", "-s", "Staging resets nightly", "-b", "At 02:00.")
    a.ok("sync", "now")
    b.ok("sync", "now")
    a.ok("memory", "forget", "--yes", saved["id"])
    a.ok("sync", "now")
    summary = b.ok("sync", "now")
    assert "removed 1 (forgotten elsewhere; a backup is kept)" in summary
    assert not (b.root / "MEMORY" / f"{saved['id']}.md").exists()
    assert "removed" not in b.ok("sync", "now")


def test_conflict_then_resolve_from_the_cli(devices: tuple[Device, Device, str]) -> None:
    a, b, _ = devices
    note = a.json("memory", "remember", "-s", "Shared", "-b", "line one")
    note_id = str(note["id"])
    a.ok("sync", "now"), b.ok("sync", "now")
    a.ok("memory", "remember", "-s", "Shared", "-b", "line one from a", "--id", note_id)
    b.ok("memory", "remember", "-s", "Shared", "-b", "line one from b", "--id", note_id)
    a.ok("sync", "now")
    out = b.ok("sync", "now")
    assert f"conflict: {note_id}" in out
    listed = b.json("sync", "conflicts")["conflicts"]
    assert [item["id"] for item in listed] == [note_id]  # type: ignore[index]
    b.ok("sync", "resolve", note_id, "--keep", "local")
    a.ok("sync", "now")
    assert "line one from b" in (a.root / "MEMORY" / f"{note_id}.md").read_text()
    assert b.json("sync", "conflicts")["conflicts"] == []


def test_off_switch_blocks_sync_until_switched_on(devices: tuple[Device, Device, str]) -> None:
    a, b, _ = devices
    a.json("memory", "remember", "-s", "Offline note", "-b", "stays here")
    a.ok("sync", "off")
    out = a.ok("sync", "now")  # exit 0: switched off by choice (any other pause exits 1)
    assert "paused: cloud sync is switched off" in out
    assert b.json("sync", "now")["scopes"][0]["pulled"] == []  # type: ignore[index]
    a.ok("sync", "on")
    assert "pushed 1" in a.ok("sync", "now")


def test_unbind_requires_the_typed_key(devices: tuple[Device, Device, str]) -> None:
    a, _, _ = devices
    a.ok("sync", "now")
    refused = a.run("sync", "unbind", "user", "--confirm", "wrong")
    assert refused.returncode == 1 and "does not match" in refused.stderr
    assert "Unbound user." in a.ok("sync", "unbind", "user", "--confirm", "user")
