"""Minimal reproductions of what the multi-device simulation found, one scenario per test.

Each test is the shortest schedule showing one defect of the sync client, written out by hand
with the simulation's world (real engine, resolver and server; injected faults). They state the
behaviour spec 07 asks for, so they fail until the defect is fixed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from simschedule import Fault
from simworld import Device, SimulatedCrash, World

from oharness.errors import SyncError
from oharness.notes.format import Note


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with World(tmp_path, seed=1, devices=2) as sim:
        yield sim


def _create(device: Device, summary: str) -> str:
    return device.create_note(summary, "".join(f"line {index}\n" for index in range(10)))


_edit_line = Device.edit_line


def _notes(device: Device) -> dict[str, Note]:
    return {stored.id: stored.note for stored in device.workspace.service.store("project").notes()}


def _texts_kept(device: Device) -> str:
    """Everything the device holds: its notes and its backups (where set-aside text goes)."""
    backups = device.workspace.service.backups()
    saved = [backups.read_bytes(record).decode() for record in backups.recent(None)]
    return "\n".join([note.body for note in _notes(device).values()] + saved)


def _crashing_pass(device: Device, fault: Fault) -> None:
    device.world.arm(fault, device)
    try:
        with pytest.raises(SimulatedCrash):
            device.sync()
    finally:
        device.world.disarm()
    device.crash()


def _conflict_then_cloud_moves_on(world: World) -> tuple[Device, Device, str]:
    """b holds a conflict on the note; then a changes it again and b syncs (the note is
    skipped as conflicted, but b's base version moves past a's change)."""
    a, b = world.devices
    note_id = _create(a, "Shared")
    a.sync(), b.sync()
    _edit_line(a, note_id, 0, "line 0 from a")
    a.sync()
    _edit_line(b, note_id, 0, "line 0 from b")
    assert b.sync().conflicts == [note_id]
    _edit_line(a, note_id, 9, "line 9 from a, later")
    a.sync()
    assert b.sync().conflicts == [note_id]
    return a, b, note_id


def test_taking_the_cloud_version_after_the_cloud_changed_again_converges(world: World) -> None:
    a, b, note_id = _conflict_then_cloud_moves_on(world)
    b.resolver().resolve(note_id, keep="cloud")
    for _ in range(2):
        b.sync(), a.sync()
    # b took the cloud version recorded in the conflict, which the cloud has moved past; its
    # base claims that old revision at a manifest version that already includes the newer
    # one, so no later delta lists the note again and b keeps the stale text for good.
    assert _notes(b)[note_id].body == _notes(a)[note_id].body


def test_keeping_this_machines_version_after_the_cloud_changed_again_is_uploaded(
    world: World,
) -> None:
    a, b, note_id = _conflict_then_cloud_moves_on(world)
    b.resolver().resolve(note_id, keep="local")
    refused_before = len(b.transport.rejected)
    for _ in range(2):
        b.sync(), a.sync()
    # Every pass of b re-sends its version with the stale base revision; the server refuses
    # it (CAS), the refusal is treated as "settled by the next pass", and the next delta does
    # not list the note: b's choice never reaches the cloud, and nothing says so.
    assert b.transport.rejected[refused_before:] == []
    assert "line 0 from b" in _notes(a)[note_id].body


def test_a_note_deleted_after_its_upload_answer_was_lost_stays_deleted(world: World) -> None:
    a, b = world.devices
    note_id = _create(a, "Uploaded")
    world.arm(Fault("http", "commit", "lost"), a)
    with pytest.raises(SyncError):
        a.sync()  # the server stored the note; the answer never came
    world.disarm()
    a.workspace.service.forget(note_id)
    a.sync(), b.sync()
    # a's base never learnt the revision it uploaded, so "deleted here" reads as "never had
    # it" and the next pass downloads the note again.
    assert note_id not in _notes(a)
    assert note_id not in world.server.manifest_notes()


def test_an_edit_after_a_lost_upload_answer_is_no_conflict_with_itself(world: World) -> None:
    a, _ = world.devices
    note_id = _create(a, "Uploaded")
    world.arm(Fault("http", "commit", "lost"), a)
    with pytest.raises(SyncError):
        a.sync()
    world.disarm()
    _edit_line(a, note_id, 3, "line 3 edited after the timeout")
    # The server holds a's own first version; without a base entry it looks like a note
    # "new on both sides" with different content: a conflict of the device with itself.
    assert a.sync().conflicts == []


def test_a_pulled_note_deleted_elsewhere_after_a_crash_is_not_uploaded_again(
    world: World,
) -> None:
    a, b = world.devices
    note_id = _create(a, "Pulled")
    a.sync()
    # b downloads the note, writes its file, and dies before its base state is saved.
    _crashing_pass(b, Fault("crash", "note", "after-replace"))
    assert note_id in _notes(b)
    a.workspace.service.forget(note_id)
    a.sync()
    b.sync(), a.sync()
    # The pulled file without a base entry reads as a note created on b: b uploads it over
    # the tombstone and a's delete is undone (the file is byte for byte the deleted
    # revision: its rev equals the tombstone's).
    assert note_id not in _notes(b)
    assert note_id not in _notes(a)


def test_a_pulled_note_deleted_here_after_a_crash_stays_deleted(world: World) -> None:
    a, b = world.devices
    note_id = _create(a, "Pulled")
    a.sync()
    _crashing_pass(b, Fault("crash", "note", "after-replace"))
    b.workspace.service.forget(note_id)  # the person deletes the note b just received
    b.sync(), a.sync()
    # No base entry: "deleted here" reads as "never had it", and the note is downloaded again.
    assert note_id not in _notes(b)
    assert note_id not in _notes(a)


def test_an_edit_written_during_a_pass_is_not_overwritten_by_a_download(world: World) -> None:
    a, b = world.devices
    note_id = _create(a, "Busy")
    a.sync(), b.sync()
    _edit_line(b, note_id, 0, "line 0 from b")
    b.sync()

    def edit_meanwhile(device: Device, fault: Fault) -> bool:
        # Another process on a (the agent's memory tool, an editor) saves the note while a's
        # pass runs: after the pass read the local notes, before it writes the pulled version.
        other = device.fresh_workspace().service.store("project")
        stored = other.get(note_id)
        assert stored is not None
        lines = stored.note.body.splitlines()
        lines[9] = "line 9 written during the pass"
        other.save(stored.note.with_changes(body="\n".join(lines) + "\n"), create=False)
        return True

    world.on_concurrent_edit = edit_meanwhile
    world.arm(Fault("local-edit", "snapshot"), a)
    a.sync()
    world.disarm()
    # The pass backs up the bytes it read at its start and then replaces whatever the file
    # holds now: the edit made in between is in neither the note nor any backup.
    assert "line 9 written during the pass" in _texts_kept(a)
