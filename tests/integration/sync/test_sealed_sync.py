"""Two machines of an end-to-end encrypted account syncing through one server: the engine's
behaviour unchanged (create, edit, delete, conflict, pending bodies), the storage holding none
of the notes' text, ids or the project's id (issue 31)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from syncharness import PROJECT_ID, Clock, Machine, Server, token

from oharness.sync.ancestor import AncestorStore
from oharness.sync.client import SyncClient
from oharness.sync.e2e import NoteCipher, new_account_key
from oharness.sync.protocol import SyncScope
from oharness.sync.scope_sync import PassResult, ScopeSync
from oharness.sync.sealed_client import SealedClient
from oharness.types import Scope

CHEAP = 2**10  # scrypt cost for tests


@dataclass
class SealedMachine(Machine):  # type: ignore[misc]
    cipher: NoteCipher | None = None

    def sync(self, scope: Scope = "project", **quota_overrides: object) -> PassResult:
        assert self.cipher is not None
        ws = self.ws
        key = ws.service.scope_key(scope)
        client = SealedClient(
            "http://sync.test",
            token(self.user),
            self.cipher,
            maps_dir=self.home / "memory-sync" / "sealed",
            http=self.server.http,
        )
        engine = ScopeSync(
            store=ws.service.store(scope),
            base=AncestorStore(self.home / "memory-sync", key),
            client=client,
            scope=SyncScope("project", PROJECT_ID) if scope == "project" else SyncScope("user"),
            scope_key=key,
            backups=ws.service.backups(),
            clock=self.clock,
        )
        return engine.run()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> Server:
    return Server(clock)


@pytest.fixture
def data_key() -> bytes:
    return new_account_key("correct horse battery", n=CHEAP).data_key


def machine(name: str, tmp_path: Path, server: Server, clock: Clock, key: bytes) -> SealedMachine:
    """A machine holding ``key``; the account's envelope is stored as turning it on does."""
    root, home = tmp_path / name / "repo", tmp_path / name / "home"
    account = SyncClient("http://sync.test", token("alice"), http=server.http)
    if account.keys().envelope is None:
        envelope = new_account_key("correct horse battery", n=CHEAP, data_key=key).envelope
        account.put_keys(envelope.to_json(), 0)
    return SealedMachine(name, root, home, server, clock, cipher=NoteCipher(key))


def stored_bytes(server: Server) -> bytes:
    return b"".join(stored.data for stored in server.store._objects.values())


def test_notes_travel_sealed_and_the_storage_reads_as_noise(
    tmp_path: Path, server: Server, clock: Clock, data_key: bytes
) -> None:
    a = machine("a", tmp_path, server, clock, data_key)
    b = machine("b", tmp_path, server, clock, data_key)
    note = a.ws.service.remember(
        "Deploys happen on Tuesdays", "Release train at noon.", tags="releasetrain"
    )
    assert a.sync().pushed == [note.id]
    pulled = b.sync()
    assert pulled.pulled == [note.id] and b.files() == a.files()
    again = b.sync()
    assert again.pushed == [] and again.pulled == [] and not again.changed_anything

    b.ws.service.remember("Deploys", "Wednesday now.", id=note.id)
    b.sync()
    assert a.sync().modified == 1 and "Wednesday now." in a.files()[note.id]
    user = a.ws.service.remember("I prefer small PRs", "Under 300 lines.", scope="user")
    a.sync("user")
    assert b.sync("user").pulled == [user.id]

    everything = stored_bytes(server)
    for plain in ("Tuesdays", "Release train", "Wednesday", "small PRs", note.id, user.id):
        assert plain.encode() not in everything, plain
    assert PROJECT_ID.encode() not in everything and b"releasetrain" not in everything

    a.ws.service.forget(note.id)
    a.sync()
    assert b.sync().removed == 1 and note.id not in b.files()


def test_both_machines_editing_one_note_merge_or_conflict_as_in_clear(
    tmp_path: Path, server: Server, clock: Clock, data_key: bytes
) -> None:
    a = machine("a", tmp_path, server, clock, data_key)
    b = machine("b", tmp_path, server, clock, data_key)
    note = a.ws.service.remember("Release checklist", "1. tests\n2. changelog\n3. tag")
    a.sync(), b.sync()
    a.ws.service.remember("Release checklist", "1. tests pass\n2. changelog\n3. tag", id=note.id)
    b.ws.service.remember("Release checklist", "1. tests\n2. changelog\n3. signed tag", id=note.id)
    a.sync()
    merged = b.sync()
    assert merged.merged == [note.id], merged
    a.sync()
    assert a.files()[note.id] == b.files()[note.id]
    assert "tests pass" in a.files()[note.id] and "signed tag" in a.files()[note.id]

    a.ws.service.remember("Release checklist", "Only A's words.", id=note.id)
    b.ws.service.remember("Release checklist", "Only B's words.", id=note.id)
    a.sync()
    clashed = b.sync()
    assert clashed.conflicts == [note.id], clashed  # kept for the person: no side dropped
    assert "Only B's words." in b.files()[note.id]


def test_a_device_with_another_key_cannot_read_and_changes_nothing(
    tmp_path: Path, server: Server, clock: Clock, data_key: bytes
) -> None:
    a = machine("a", tmp_path, server, clock, data_key)
    a.ws.service.remember("Deploys happen on Tuesdays", "At noon.")
    a.sync()
    stranger = machine("c", tmp_path, server, clock, new_account_key("other", n=CHEAP).data_key)
    result = stranger.sync()
    assert result.pulled == [] and stranger.files() == {}


def test_a_pull_larger_than_one_answer_takes_the_pending_bodies(
    tmp_path: Path, clock: Clock, data_key: bytes
) -> None:
    server = Server(clock, max_response_bytes=6_000)
    a = machine("a", tmp_path, server, clock, data_key)
    b = machine("b", tmp_path, server, clock, data_key)
    for number in range(12):
        a.ws.service.remember(f"Service {number} owner", f"Team {number} owns service {number}.")
    a.sync()
    b.sync()
    assert b.files() == a.files() and len(b.files()) == 12


def test_a_body_over_the_limit_is_refused_before_it_is_sealed(
    tmp_path: Path, clock: Clock, data_key: bytes
) -> None:
    server = Server(clock, max_body_bytes=2_000)  # the server could not see a sealed body
    a = machine("a", tmp_path, server, clock, data_key)
    small = a.ws.service.remember("Small note", "Fits.")
    big = a.ws.service.remember("Big note", "x" * 3_000)
    result = a.sync()
    assert result.pushed == [small.id]
    [refused] = result.rejected
    assert refused["id"] == big.id and refused["reason"] == "too_large"
    assert "over the server's 2000" in refused["message"]
