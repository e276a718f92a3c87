"""The local side of a pass: a synced note whose file is gone is a deletion only when its
text is gone from the folder too."""

from __future__ import annotations

from pathlib import Path

import pytest

from oharness.notes.format import Note, serialise_note_bytes
from oharness.notes.store import NoteStore
from oharness.sync.ancestor import BaseNote
from oharness.sync.local import classify_local


def _write(folder: Path, name: str, note_id: str) -> None:
    note = Note(note_id, f"Note {note_id}", "text\n", (), None, 1, 1)
    (folder / name).write_bytes(serialise_note_bytes(note))


@pytest.fixture
def store(tmp_path: Path) -> NoteStore:
    folder = tmp_path / "MEMORY"
    folder.mkdir()
    return NoteStore(folder, scope="project", lock_path=tmp_path / "lock")


def _base(*ids: str) -> dict[str, BaseNote]:
    return {note_id: BaseNote("r" * 32, "sha256:x") for note_id in ids}


def test_moved_renamed_and_recased_notes_are_held(store: NoteStore) -> None:
    folder = store.directory
    (folder / "archive").mkdir()
    _write(folder / "archive", "moved-1.md", "moved-1")
    _write(folder, "other-name.md", "renamed-1")
    _write(folder, "Recased-1.md", "Recased-1")
    _write(folder, "kept-1.md", "kept-1")
    base = _base("moved-1", "renamed-1", "recased-1", "kept-1", "forgotten-1")
    syncable, problems = classify_local(store, base, 2)
    held = {note_id for problem in problems for note_id in problem.ids()}
    assert {"moved-1", "renamed-1", "recased-1", "Recased-1"} <= held
    assert "forgotten-1" not in held  # its text is gone: the deletion is uploaded
    assert set(syncable) == {"kept-1"}
    by_file = {problem.file: problem for problem in problems}
    assert by_file["archive/moved-1.md"].code == "in_subfolder"
    assert "oharness memory adopt archive/moved-1.md" in by_file["archive/moved-1.md"].message
    assert by_file["Recased-1.md"].code == "recased"


def test_nothing_is_walked_or_held_when_no_synced_note_is_missing(store: NoteStore) -> None:
    folder = store.directory
    _write(folder, "kept-1.md", "kept-1")
    (folder / "archive").mkdir()
    _write(folder / "archive", "kept-1.md", "kept-1")  # a copy: the note syncs from its file
    syncable, problems = classify_local(store, _base("kept-1"), 2)
    assert set(syncable) == {"kept-1"} and problems == []
