"""Markdown files of a notes folder that are not loaded: each named with its reason and fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oharness.errors import ConflictError
from oharness.notes.format import Note, serialise_note_bytes
from oharness.notes.loose import find_loose_files
from oharness.notes.store import NoteStore


def _note(note_id: str, body: str = "text\n") -> bytes:
    return serialise_note_bytes(Note(note_id, f"Note {note_id}", body, (), None, 1, 1))


@pytest.fixture
def store(tmp_path: Path) -> NoteStore:
    folder = tmp_path / "MEMORY"
    folder.mkdir()
    return NoteStore(folder, scope="project", lock_path=tmp_path / "lock")


def test_every_kind_of_loose_file_is_named(store: NoteStore, tmp_path: Path) -> None:
    folder = store.directory
    (folder / "kept-1.md").write_bytes(_note("kept-1"))
    (folder / "plain.md").write_text("# Plain\n", encoding="utf-8")
    (folder / "yaml.md").write_text("---\ntitle: Y\n---\nbody\n", encoding="utf-8")
    (folder / "broken.md").write_text('---\n{"id": "broken", "s\n---\nbody\n', encoding="utf-8")
    (folder / "renamed.md").write_bytes(_note("was-1"))
    (folder / "upper-1.MD").write_bytes(_note("upper-1"))
    (folder / "archive").mkdir()
    (folder / "archive" / "moved-1.md").write_bytes(_note("moved-1"))
    (folder / "archive" / "kept-1.md").write_bytes(_note("kept-1"))
    (folder / "archive" / "deep").mkdir()
    (folder / "archive" / "deep" / "notes.markdown").write_text("plain\n", encoding="utf-8")
    (folder / ".obsidian").mkdir()
    (folder / ".obsidian" / "hidden.md").write_text("x\n", encoding="utf-8")
    (folder / "archive" / "picture.png").write_bytes(b"\x89PNG")
    outside = tmp_path / "outside.md"
    outside.write_bytes(_note("outside-1"))
    os.symlink(outside, folder / "archive" / "link.md")
    found = {loose.relative: loose for loose in find_loose_files(store)}
    assert set(found) == {
        "plain.md",
        "yaml.md",
        "broken.md",
        "renamed.md",
        "upper-1.MD",
        "archive/moved-1.md",
        "archive/kept-1.md",
        "archive/deep/notes.markdown",
    }
    assert found["plain.md"].code == "no_frontmatter" and found["plain.md"].adoptable
    assert found["yaml.md"].adoptable and not found["broken.md"].adoptable
    assert found["renamed.md"].note_id == "was-1" and found["renamed.md"].code == "name_mismatch"
    assert found["upper-1.MD"].note_id == "upper-1" and found["upper-1.MD"].code == "misnamed"
    moved = found["archive/moved-1.md"]
    assert moved.note_id == "moved-1" and moved.code == "in_subfolder" and not moved.duplicate
    assert "oharness memory adopt archive/moved-1.md" in moved.message
    assert found["archive/kept-1.md"].duplicate
    assert "delete the copy" in found["archive/kept-1.md"].fix
    assert found["archive/deep/notes.markdown"].note_id is None
    assert [stored.id for stored in store.notes()] == ["kept-1"]


def test_an_empty_file_and_a_link_outside_get_a_fix_that_works(
    store: NoteStore, tmp_path: Path
) -> None:
    # adopt refuses an empty body, so "make it a note with: adopt" failed; a link pointing
    # outside had no fix at all.
    folder = store.directory
    (folder / "empty.md").write_bytes(b"")
    (folder / "blank.md").write_text("\n  \n", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_bytes(_note("outside-1"))
    os.symlink(outside, folder / "link-out.md")
    found = {loose.relative: loose for loose in find_loose_files(store)}
    for name in ("empty.md", "blank.md"):
        assert found[name].code == "empty" and not found[name].adoptable
        assert found[name].fix.startswith("delete it, or write the note in it")
    (problem,) = [p for p in store.problems() if p.path.name == "link-out.md"]
    assert f"cp --remove-destination {outside}" in problem.message


def test_user_scope_fixes_name_the_scope(tmp_path: Path) -> None:
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "my notes.md").write_text("hello\n", encoding="utf-8")
    store = NoteStore(folder, scope="user", lock_path=tmp_path / "lock")
    (loose,) = find_loose_files(store)
    assert "oharness memory adopt --scope user 'my notes.md'" in loose.fix


def test_adopt_bytes_puts_a_note_back_and_refuses_a_changed_source(store: NoteStore) -> None:
    from oharness.notes.format import file_revision

    folder = store.directory
    (folder / "sub").mkdir()
    source = folder / "sub" / "back-1.md"
    data = _note("back-1")
    source.write_bytes(data)
    with pytest.raises(ConflictError):
        store.adopt_bytes("back-1", data, source, source_revision="0" * 32)
    assert source.exists() and not (folder / "back-1.md").exists()
    stored = store.adopt_bytes("back-1", data, source, source_revision=file_revision(data))
    assert stored.path == folder / "back-1.md" and not source.exists()
    assert [s.id for s in store.notes()] == ["back-1"] and find_loose_files(store) == []
    (folder / "sub" / "back-1.md").write_bytes(data)  # a second copy: never replaces the note
    with pytest.raises(ConflictError):
        store.adopt_bytes(
            "back-1", data, folder / "sub" / "back-1.md", source_revision=file_revision(data)
        )
