"""Two and three machines syncing through one server: the rows of spec 07.2."""

from __future__ import annotations

from pathlib import Path

import pytest
from syncharness import Clock, Machine, Server

from oharness.sync.conflicts import ConflictBook


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> Server:
    return Server(clock)


@pytest.fixture
def a(tmp_path: Path, server: Server, clock: Clock) -> Machine:
    return Machine("a", tmp_path / "a" / "repo", tmp_path / "a" / "home", server, clock)


@pytest.fixture
def b(tmp_path: Path, server: Server, clock: Clock) -> Machine:
    return Machine("b", tmp_path / "b" / "repo", tmp_path / "b" / "home", server, clock)


def _write(machine: Machine, summary: str, body: str, **kwargs: object) -> str:
    return machine.ws.service.remember(summary, body, **kwargs).id  # type: ignore[arg-type]


def test_a_new_note_travels_and_nothing_changed_is_one_request(a: Machine, b: Machine) -> None:
    note_id = _write(a, "Deploys happen on Tuesdays", "Release train at noon.")
    first = a.sync()
    assert first.pushed == [note_id]
    pulled = b.sync()
    assert pulled.pulled == [note_id] and pulled.added == 1
    assert b.files() == a.files()
    again = b.sync()
    assert again.pushed == [] and again.pulled == [] and not again.changed_anything


def test_edit_and_delete_travel_with_backups(a: Machine, b: Machine) -> None:
    note_id = _write(a, "Deploys", "Tuesday.")
    a.sync(), b.sync()
    a.ws.service.remember("Deploys", "Wednesday now.", id=note_id)
    a.sync()
    result = b.sync()
    assert result.modified == 1 and "Wednesday now." in b.files()[note_id]
    reasons = [record.reason for record in b.ws.service.backups().recent()]
    assert reasons == ["pull-update"]
    a.ws.service.forget(note_id)
    a.sync()
    gone = b.sync()
    assert gone.removed == 1 and note_id not in b.files()
    assert b.ws.service.backups().recent()[0].reason == "pull-delete"


def test_edits_far_apart_merge_and_both_sides_are_backed_up(a: Machine, b: Machine) -> None:
    body = "one\ntwo\nthree\nfour\nfive\n"
    note_id = _write(a, "Steps", body, tags="ops")
    a.sync(), b.sync()
    a.ws.service.remember("Steps", body.replace("one", "ONE"), id=note_id, tags="ops a")
    b.ws.service.remember("Steps", body.replace("five", "FIVE"), id=note_id, tags="ops b")
    a.sync()
    merged = b.sync()
    assert merged.merged == [note_id] and merged.pushed == [note_id]
    a.sync()
    note_a = a.ws.service.read(note_id)
    assert note_a.body == "ONE\ntwo\nthree\nfour\nFIVE\n"
    assert set(note_a.tags) == {"ops", "a", "b"}
    assert a.files() == b.files()
    reasons = [r.reason for r in b.ws.service.backups().recent()]
    assert reasons == ["sync-merge", "sync-merge", "remember-update"]  # newest first


def test_same_line_edits_conflict_and_block_only_their_note(a: Machine, b: Machine) -> None:
    note_id = _write(a, "Shared", "line one\n")
    other = _write(a, "Other", "unrelated\n")
    a.sync(), b.sync()
    a.ws.service.remember("Shared", "line ONE from a\n", id=note_id)
    b.ws.service.remember("Shared", "line one from b\n", id=note_id)
    b.ws.service.remember("Other", "b edited this too\n", id=other)
    a.sync()
    result = b.sync()
    assert result.conflicts == [note_id]
    assert result.pushed == [other]  # the other note is not blocked
    record = ConflictBook(b.base().conflicts).get(note_id)
    assert record.local and "from b" in record.local
    assert record.cloud and "from a" in record.cloud
    assert record.base and "line one" in record.base
    assert "from b" in b.files()[note_id]  # no markers, local file untouched


def test_changed_here_deleted_there_recreates(a: Machine, b: Machine) -> None:
    note_id = _write(a, "Keep me", "v1\n")
    a.sync(), b.sync()
    a.ws.service.forget(note_id)
    a.sync()
    b.ws.service.remember("Keep me", "v2 edited on b\n", id=note_id)
    assert b.sync().pushed == [note_id]
    a.sync()
    assert "v2 edited on b" in a.files()[note_id]


def test_deleted_here_changed_there_downloads(a: Machine, b: Machine) -> None:
    note_id = _write(a, "Keep me", "v1\n")
    a.sync(), b.sync()
    b.ws.service.forget(note_id)
    a.ws.service.remember("Keep me", "v2 from a\n", id=note_id)
    a.sync()
    result = b.sync()
    assert result.pulled == [note_id] and "v2 from a" in b.files()[note_id]


def test_new_on_both_sides(a: Machine, b: Machine) -> None:
    same_a = a.ws.service.store("project")
    text = (
        b"---\n" + b'{"id":"same-1","summary":"S","tags":[],"createdAt":1,"updatedAt":1}\n---\nx\n'
    )
    same_a.save_bytes("same-1", text, create=True)
    b.ws.service.store("project").save_bytes("same-1", text, create=True)
    different = text.replace(b"x\n", b"y\n").replace(b"same-1", b"diff-1")
    a.ws.service.store("project").save_bytes("diff-1", different, create=True)
    b.ws.service.store("project").save_bytes(
        "diff-1", different.replace(b"y\n", b"z\n"), create=True
    )
    a.sync()
    result = b.sync()
    assert result.conflicts == ["diff-1"]
    assert "same-1" in b.base().load().notes


def test_unsyncable_files_are_never_deletions(a: Machine, b: Machine) -> None:
    note_id = _write(a, "Fragile", "ok\n")
    a.sync(), b.sync()
    path = b.notes_dir() / f"{note_id}.md"
    path.write_text("---\n{broken json\n---\n")
    result = b.sync()
    assert result.unsyncable == [f"{note_id}.md"]
    assert a.sync().removed == 0 and note_id in a.files()
    assert path.read_text() == "---\n{broken json\n---\n"


def test_tombstone_expiry_deletes_synced_unchanged_and_conflicts_changed(
    tmp_path: Path, clock: Clock
) -> None:
    server = Server(clock, tombstone_days=1)
    a = Machine("a", tmp_path / "a", tmp_path / "ha", server, clock)
    b = Machine("b", tmp_path / "b", tmp_path / "hb", server, clock)
    c = Machine("c", tmp_path / "c", tmp_path / "hc", server, clock)
    gone = _write(a, "Old", "bye\n")
    edited = _write(a, "Edited meanwhile", "v1\n")
    a.sync(), b.sync(), c.sync()
    a.ws.service.forget(gone)
    a.ws.service.forget(edited)
    a.sync()
    c.ws.service.remember("Edited meanwhile", "v2 on c\n", id=edited)
    clock.advance_days(3)
    _write(a, "Trigger", "a commit expires old tombstones\n")
    a.sync()
    b_result = b.sync()
    assert gone not in b.files() and edited not in b.files()
    assert b_result.removed == 2
    c_result = c.sync()
    assert gone not in c.files()
    assert c_result.conflicts == [edited] or c_result.pushed == [edited]


def test_server_reset_deletes_nothing(a: Machine, b: Machine, server: Server) -> None:
    note_id = _write(a, "Survives", "kept\n")
    a.sync()
    for key in server.store.list(""):
        server.store.delete(key)
    result = a.sync()
    assert note_id in a.files()
    assert result.pushed == [note_id]
    assert b.sync().pulled == [note_id]


def test_user_scope_syncs_too(a: Machine, b: Machine) -> None:
    note_id = _write(a, "Prefers terse answers", "code first\n", type="user")
    assert a.sync("user").pushed == [note_id]
    assert b.sync("user").pulled == [note_id]
    assert note_id in b.files("user")
