"""NoteStore's compare-and-swap (``expect_revision``) and its injected wall clock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oharness.errors import ConflictError
from oharness.notes.format import Note, file_revision, serialise_note_bytes
from oharness.notes.store import NoteStore, StoredNote


def _bytes(body: str) -> bytes:
    note = Note(id="deploy-days-1a2", summary="Deploys happen on Tuesdays", body=body)
    return serialise_note_bytes(note)


@pytest.fixture
def store(tmp_path: Path) -> NoteStore:
    return NoteStore(tmp_path / "MEMORY", scope="project", lock_path=tmp_path / "notes.lock")


@pytest.fixture
def edited_elsewhere(store: NoteStore) -> tuple[str, bytes]:
    """The note as this process read it (its revision), then rewritten by another writer."""
    read = store.save_bytes("deploy-days-1a2", _bytes("Release train at noon.\n"), create=True)
    theirs = _bytes("Release train at two.\n")
    read.path.write_bytes(theirs)
    return read.revision, theirs


def _stored(store: NoteStore) -> StoredNote:
    stored = store.get("deploy-days-1a2")
    assert stored is not None
    return stored


def _on_disk(store: NoteStore) -> bytes:
    return store.path_for("deploy-days-1a2").read_bytes()


def test_a_write_expecting_an_old_revision_replaces_nothing(
    store: NoteStore, edited_elsewhere: tuple[str, bytes]
) -> None:
    old, theirs = edited_elsewhere
    with pytest.raises(ConflictError, match="changed on disk"):
        store.save_bytes("deploy-days-1a2", _bytes("Ours.\n"), create=False, expect_revision=old)
    assert _on_disk(store) == theirs
    store.refresh(full=True)
    assert _stored(store).revision == file_revision(theirs)


def test_a_write_expecting_the_current_revision_goes_through(
    store: NoteStore, edited_elsewhere: tuple[str, bytes]
) -> None:
    _, theirs = edited_elsewhere
    ours = _bytes("Ours, on top of theirs.\n")
    written = store.save_bytes(
        "deploy-days-1a2", ours, create=False, expect_revision=file_revision(theirs)
    )
    assert _on_disk(store) == ours and written.revision == file_revision(ours)


def test_a_delete_expecting_an_old_revision_keeps_the_file(
    store: NoteStore, edited_elsewhere: tuple[str, bytes]
) -> None:
    old, theirs = edited_elsewhere
    with pytest.raises(ConflictError):
        store.delete("deploy-days-1a2", expect_revision=old)
    assert _on_disk(store) == theirs
    store.delete("deploy-days-1a2", expect_revision=file_revision(theirs))
    assert not store.path_for("deploy-days-1a2").exists()


def test_inside_a_batch_the_file_on_disk_is_still_checked(
    store: NoteStore, edited_elsewhere: tuple[str, bytes]
) -> None:
    old, theirs = edited_elsewhere
    with store.batch():
        store.path_for("deploy-days-1a2").write_bytes(_bytes("A third version.\n"))
        with pytest.raises(ConflictError):
            store.save_bytes(
                "deploy-days-1a2",
                _bytes("Ours.\n"),
                create=False,
                expect_revision=file_revision(theirs),
            )
    assert _on_disk(store) == _bytes("A third version.\n")
    assert old != file_revision(theirs)


def test_a_note_removed_meanwhile_is_not_recreated_by_a_swap(
    store: NoteStore, edited_elsewhere: tuple[str, bytes]
) -> None:
    old, _ = edited_elsewhere
    with store.batch():
        store.path_for("deploy-days-1a2").unlink()
        with pytest.raises(ConflictError):
            store.save_bytes(
                "deploy-days-1a2", _bytes("Ours.\n"), create=False, expect_revision=old
            )
    assert not store.path_for("deploy-days-1a2").exists()


def test_without_an_expected_revision_the_write_just_replaces(
    store: NoteStore, edited_elsewhere: tuple[str, bytes]
) -> None:
    store.save_bytes("deploy-days-1a2", _bytes("Ours.\n"), create=False)
    assert _on_disk(store) == _bytes("Ours.\n")


class Monotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _rewrite_in_place(path: Path, data: bytes) -> None:
    """A person's editor saving over the file: the folder's mtime does not change."""
    with path.open("r+b") as handle:
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())


@pytest.mark.parametrize(("seconds_after_the_change", "seen"), [(0.5, True), (3600.0, False)])
def test_a_folder_changed_just_now_is_read_again_soon(
    tmp_path: Path, seconds_after_the_change: float, seen: bool
) -> None:
    """Within the file system's time granularity a folder may change again unseen: a store
    whose wall clock says the folder changed moments ago re-reads it at its next refresh; one
    whose clock says it changed long ago trusts the folder's stamp until the next sweep."""
    directory = tmp_path / "MEMORY"
    monotonic = Monotonic()
    changed_at: list[int] = []
    store = NoteStore(
        directory,
        scope="project",
        lock_path=tmp_path / "notes.lock",
        sweep_interval=1_000.0,
        monotonic=monotonic,
        wall_clock=lambda: (changed_at[0] + int(seconds_after_the_change * 1e9)) // 1_000_000,
    )
    written = store.save_bytes("deploy-days-1a2", _bytes("Noon.\n"), create=True)
    changed_at.append(os.stat(directory).st_mtime_ns)
    store.refresh()
    _rewrite_in_place(written.path, _bytes("Two o'clock.\n"))
    monotonic.now += 0.1
    assert store.refresh() is seen
    body = _stored(store).note.body
    assert body == ("Two o'clock.\n" if seen else "Noon.\n")
