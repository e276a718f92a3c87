"""The server losing and regaining protocol 2 (an older release deployed over the same storage,
then the current one again): the client finds out from a 426 and reads the server's protocols
again (at every pass while the server is older, daily otherwise); typed notes stop syncing with a
reason named per note while it is older and resume after the upgrade, nothing lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from simrun import run_seed
from simschedule import ScheduleShape
from simworld import Device, World

from oharness.errors import SyncError
from oharness.notes.format import Note
from oharness.sync.scope_sync import PassResult


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with World(tmp_path, seed=5, devices=2) as sim:
        yield sim


def _create(device: Device, note_id: str, note_type: str | None) -> None:
    now = device.world.clock()
    note = Note(note_id, note_id.title(), f"{note_id} body\n", (), note_type, now, now)  # type: ignore[arg-type]
    device.workspace.service.store("project").save(note, create=True)


def _edit(device: Device, note_id: str, body: str) -> None:
    store = device.workspace.service.store("project")
    stored = store.get(note_id)
    assert stored is not None
    store.save(stored.note.with_changes(body=body, updated_at=device.world.clock()), create=False)


def _notes(device: Device) -> dict[str, str]:
    store = device.workspace.service.store("project")
    store.refresh(full=True)
    return {stored.id: stored.note.content_hash for stored in store.notes()}


def _held_back(result: PassResult) -> set[str | None]:
    codes = ("old_server", "old_server_delete")
    return {problem.id for problem in result.problems if problem.code in codes}


def test_typed_notes_pause_on_an_older_server_and_resume_after_the_upgrade(
    world: World,
) -> None:
    a, b = world.devices
    _create(a, "plain-1", None)
    _create(a, "typed-1", "project")
    a.sync(), b.sync()
    assert _notes(b) == _notes(a) == world.server.manifest_notes()

    world.server.deploy((1,))
    _edit(b, "typed-1", "edited on b while the server is older\n")
    _edit(b, "plain-1", "plain edit on b\n")
    with pytest.raises(SyncError) as refused:  # b still speaks 2: told by a 426
        b.sync()
    assert refused.value.code == "protocol_unsupported"
    result = b.sync()  # reads the protocols again, speaks 1
    assert b.protocol == 1 and _held_back(result) == {"typed-1"}
    assert "upgrade the server" in result.problems[0].message
    _create(a, "typed-2", "user")
    with pytest.raises(SyncError):
        a.sync()
    result = a.sync()
    assert _held_back(result) == {"typed-1", "typed-2"}
    assert _notes(a)["plain-1"] == _notes(b)["plain-1"]  # untyped notes still sync
    assert "typed-1" in _notes(a) and "typed-1" in world.server.manifest_notes()

    reads = a.identity_reads
    result = a.sync()  # still older: read again at every pass, still named
    assert a.identity_reads == reads + 1 and _held_back(result) == {"typed-1", "typed-2"}
    world.server.deploy((1, 2))
    a.sync()  # the next pass notices the upgrade
    assert a.identity_reads == reads + 2 and a.protocol == 2
    b.sync(), a.sync()
    assert a.identity_reads == reads + 2 and a.protocol == b.protocol == 2
    assert _notes(a) == _notes(b) == world.server.manifest_notes()
    assert set(_notes(a)) == {"plain-1", "typed-1", "typed-2"}
    body = b.workspace.service.store("project").get("typed-1")
    assert body is not None and body.note.body == "edited on b while the server is older\n"


def test_a_current_server_is_read_again_daily_not_on_every_pass(world: World) -> None:
    a, _ = world.devices
    _create(a, "plain-1", None)
    a.sync()
    reads = a.identity_reads
    world.clock.advance_hours(23)
    a.sync()
    assert a.identity_reads == reads
    world.clock.advance_hours(2)
    a.sync()
    assert a.identity_reads == reads + 1


def test_a_typed_note_deleted_under_protocol_1_stays_deleted_after_the_upgrade(
    world: World,
) -> None:
    a, b = world.devices
    _create(a, "typed-1", "feedback")
    a.sync(), b.sync()
    world.server.deploy((1,))
    with pytest.raises(SyncError):
        a.sync()
    a.workspace.service.forget("typed-1")
    result = a.sync()  # a protocol-1 listing hides typed-1: its deletion waits, named
    assert _held_back(result) == {"typed-1"}
    assert "deletion is uploaded once the server is upgraded" in result.problems[0].message
    world.server.deploy((1, 2))
    world.clock.advance_hours(1)
    a.sync(), b.sync()
    assert "typed-1" not in world.server.manifest_notes()
    assert "typed-1" not in _notes(a) and "typed-1" not in _notes(b)


#: Long seeds of the world with server downgrades that failed before the fixes: 1000017, a
#: typed note deleted while the server spoke protocol 1 came back after the upgrade (the
#: protocol-1 listing hid it, and the base forgot it); 1000010, such a held deletion of a note
#: another machine had re-created untyped (the listing shows it: planned at once, not held);
#: 1000014, the pass after one under a lowered memory.maxNotes was wrongly expected to do
#: nothing.
@pytest.mark.parametrize("seed", [1_000_010, 1_000_014, 1_000_017])
def test_long_seeds_with_server_downgrades_keep_every_invariant(seed: int, tmp_path: Path) -> None:
    report = run_seed(seed, ScheduleShape(devices=4, steps=100), tmp_path / f"seed-{seed}")
    if report.failed:
        pytest.fail(report.describe(), pytrace=False)
