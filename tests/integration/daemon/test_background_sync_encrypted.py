"""Background sync of an end-to-end encrypted account, done by the daemons alone: three machines
(three homes), each with a clone of one git repository and an ``oharness serve`` of its own,
one real ``oharness sync-server serve`` on file storage (the sync CLI tests' server).

A turns encryption on and B unlocks, both with the CLI: notes written with the CLI on either
reach the other's files with no command, and the storage holds none of their text, their ids or
the project's id in clear. C is signed in without the key: its daemon's sync is paused (the CLI,
the REST status and the Memory page say why), uploads nothing, and syncs by itself once
``oharness sync unlock`` ran on C.

The daemons check every second (``OHARNESS_DAEMON_SYNC_SECONDS``); the budget asserted is the
other daemon tests' 30 s. Checking every second, each daemon spends its whole request budget
(20 a minute), and three of them the account's 60 a minute at the server: the server here
allows more, so that a 429 does not stand for the 20 s a person's daemons wait between checks.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from daemon_support import CliMachine, arrives, daemon_processes

from oharness.sdk import DaemonClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sync"))
from cliworld import SECRET, Server, Storage, plaintext_in, storage_for, token_for
from repos import git

PASSPHRASE = "correct horse battery staple"
BUDGET = 30.0


@dataclass(frozen=True)
class World:
    """The sync server, its storage and the repository every machine clones."""

    root: Path
    server: Server
    storage: Storage
    upstream: Path

    def machine(self, name: str) -> CliMachine:
        """A new machine: a clone of the repository, its project initialised, signed in."""
        git(self.root, "clone", "-q", str(self.upstream), name)
        machine = CliMachine(self.root / f"home-{name}", self.root / name, SECRET)
        machine.run("project", "init")
        machine.run("login", "--origin", self.server.origin, "--token", token_for("ann"))
        return machine

    def plaintext(self, words: list[str]) -> list[str]:
        """The ``words`` the storage holds in clear."""
        assert self.storage.keys(), "nothing was uploaded"
        return plaintext_in(self.storage, words)


def _user_note(machine: CliMachine, note_id: str) -> Path:
    return machine.home / "memory" / "user" / f"{note_id}.md"


def _project_id(machine: CliMachine) -> str:
    data = json.loads((machine.project / ".oharness" / "project.json").read_text())
    return str(data["id"])


def _remember(machine: CliMachine, summary: str, body: str, *extra: str) -> str:
    return str(machine.json("memory", "remember", "-s", summary, "-b", body, *extra)["id"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("encrypted-daemons")
    upstream = root / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / "README.md").write_text("hello\n")
    git(upstream, "add", "README.md")
    git(upstream, "commit", "-q", "-m", "root")
    storage = storage_for("file", root)
    server = Server(storage, root / "server.log", OHARNESS_SYNC_RATE_PER_MINUTE="600")
    try:
        yield World(root, server, storage, upstream)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def unlocked(world: World) -> Iterator[tuple[CliMachine, CliMachine]]:
    """A turned encryption on, B unlocked; each runs its daemon in its clone."""
    a = world.machine("a")
    turned = a.run("sync", "encrypt", "--yes", "--passphrase-stdin", stdin=PASSPHRASE + "\n")
    assert "End-to-end encryption is on" in turned
    with daemon_processes((a.home, a.project)):
        b = world.machine("b")
        assert "Unlocked" in b.run("sync", "unlock", "--passphrase-stdin", stdin=PASSPHRASE + "\n")
        with daemon_processes((b.home, b.project)):
            yield a, b


def _holds(path: Path, text: str, since: float) -> None:
    """Wait until the note at ``path`` holds ``text`` (fails past the budget)."""
    while text not in path.read_text(encoding="utf-8"):
        assert time.monotonic() - since < BUDGET, f"{path.name} never held {text!r}"
        time.sleep(0.2)


def test_notes_travel_sealed_between_two_daemons_holding_the_key(
    world: World, unlocked: tuple[CliMachine, CliMachine]
) -> None:
    a, b = unlocked
    project_note = _remember(a, "Deploys happen on Tuesdays", "At noon, never on a Friday.")
    user_note = _remember(a, "I prefer small pull requests", "Under 300 lines.", "--scope", "user")
    since = time.monotonic()
    arrives(b.note(project_note), since, BUDGET)
    arrives(_user_note(b, user_note), since, BUDGET)
    assert "never on a Friday" in b.note(project_note).read_text(encoding="utf-8")

    edited = "At noon; Wednesdays in August."
    _remember(b, "Deploys happen on Tuesdays", edited, "--id", project_note)
    _holds(a.note(project_note), "Wednesdays in August", time.monotonic())

    words = [
        "Deploys happen",
        "never on a Friday",
        "Wednesdays in August",
        "small pull requests",
        "Under 300 lines",
        project_note,
        user_note,
        _project_id(a),
    ]
    assert world.plaintext(words) == []
    for machine in (a, b):
        assert "end-to-end encrypted" in machine.run("sync", "status")


def _daemon_http(machine: CliMachine) -> httpx2.Client:
    """A client of the machine's running daemon, with its token."""
    address = json.loads((machine.home / "daemon.json").read_text(encoding="utf-8"))["url"]
    token = (machine.home / "daemon-token").read_text(encoding="utf-8").strip()
    return httpx2.Client(base_url=address, headers={"Authorization": f"Bearer {token}"}, timeout=10)


def _paused_passes(machine: CliMachine, count: int) -> None:
    """Wait for ``count`` passes of the project's notes that the daemon reports paused."""
    deadline = time.monotonic() + BUDGET
    with _daemon_http(machine) as http, http.stream("GET", "/events") as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            event: dict[str, Any] = json.loads(line[len("data: ") :])
            data = event.get("data") or {}
            if event.get("type") == "sync_status" and data.get("scope") == "project":
                assert data.get("paused") and not data.get("pushed"), event
                count -= 1
                if count == 0:
                    return
            assert time.monotonic() < deadline, "the daemon reported no paused pass"
    raise AssertionError("the event stream ended")


def _locked(machine: CliMachine) -> None:
    """The CLI, the daemon's REST status and the Memory page say sync waits for the key."""
    since = time.monotonic()
    while True:
        scopes = machine.json("sync", "status")["scopes"]
        reasons = [str(scope.get("paused") or "") for scope in scopes]
        if len(reasons) == 2 and all(reason.startswith("encrypted:") for reason in reasons):
            break
        assert time.monotonic() - since < BUDGET, f"not paused for the key: {scopes}"
        time.sleep(0.2)
    assert all("'oharness sync unlock'" in reason for reason in reasons), reasons
    assert "paused: encrypted" in machine.run("sync", "status")
    with DaemonClient(home=machine.home) as client:
        rest = client.sync_status()["scopes"]
    assert all(str(scope["paused"]).startswith("encrypted:") for scope in rest), rest
    with _daemon_http(machine) as http:
        page = http.get("/memory/sync/status")
    assert page.status_code == 200
    assert "This account is end-to-end encrypted: enter the passphrase" in page.text


def test_a_daemon_without_the_key_waits_then_syncs_once_unlocked(
    world: World, unlocked: tuple[CliMachine, CliMachine]
) -> None:
    a, _ = unlocked
    from_a = _remember(a, "The staging database is db-2", "Moved there in March.")
    about_a = _remember(a, "I review code in the morning", "Before ten.", "--scope", "user")
    c = world.machine("c")
    with daemon_processes((c.home, c.project)):
        _locked(c)
        from_c = _remember(c, "Written on C before the key", "The cache lives in Redis 7.")
        _paused_passes(c, 2)  # the second began after the note was written
        words = ["Written on C", "Redis 7", from_c, "staging database", "db-2", from_a]
        assert world.plaintext(words) == []
        assert not c.note(from_a).exists()

        unlock = c.run("sync", "unlock", "--passphrase-stdin", stdin=PASSPHRASE + "\n")
        assert "Unlocked" in unlock
        since = time.monotonic()  # no command from here: the daemons do the rest
        arrives(c.note(from_a), since, BUDGET)
        arrives(_user_note(c, about_a), since, BUDGET)
        arrives(a.note(from_c), since, BUDGET)
        assert "Redis 7" in a.note(from_c).read_text(encoding="utf-8")
        assert world.plaintext([*words, "review code", about_a, _project_id(c)]) == []
        scopes = c.json("sync", "status")["scopes"]
        assert [scope["paused"] for scope in scopes] == [None, None], scopes
        assert "end-to-end encrypted" in c.run("sync", "status")
