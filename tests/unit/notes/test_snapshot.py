"""The parsed-notes snapshot: a new process takes unchanged notes from it, parses the rest."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from oharness.notes import note_cache, snapshot
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.snapshot import REWRITE_AFTER, snapshot_path
from oharness.notes.store import NoteStore

COUNT = REWRITE_AFTER + 6
OLD_NS = 1_700_000_000 * 10**9


@pytest.fixture(autouse=True)
def no_racy_window(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """The files here were all just written (their ctime is now, whatever their mtime): only
    the test of the racy window keeps it."""
    if "racy" not in request.node.name:
        monkeypatch.setattr(snapshot, "RACY_WINDOW_NS", -(10**12))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "MEMORY"
    folder.mkdir()
    for number in range(COUNT):
        note = Note(f"note-{number:03d}", f"Note {number}", f"Body {number} [[note-000]]")
        path = folder / f"{note.id}.md"
        path.write_bytes(serialise_note_bytes(note))
        os.utime(path, ns=(OLD_NS, OLD_NS + number))
    return folder


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many files the note cache parsed itself."""
    counted: list[int] = []

    def counting(data: bytes, **kwargs: Any) -> Note:
        counted.append(1)
        return parse_note_bytes(data, **kwargs)

    monkeypatch.setattr(note_cache, "parse_note_bytes", counting)
    return counted


def open_store(folder: Path, cache: Path) -> NoteStore:
    """A store as a new process opens it (nothing in memory)."""
    return NoteStore(
        folder,
        scope="project",
        lock_path=cache.parent / "lock",
        snapshot_path=snapshot_path(cache, "project", folder),
    )


def test_a_new_process_takes_unchanged_notes_from_the_snapshot(
    folder: Path, tmp_path: Path, parses: list[int]
) -> None:
    cache = tmp_path / "cache"
    first = {stored.id: stored for stored in open_store(folder, cache).notes()}
    assert len(parses) == COUNT
    written = snapshot_path(cache, "project", folder)
    assert written.exists()

    second = {stored.id: stored for stored in open_store(folder, cache).notes()}
    assert len(parses) == COUNT  # not one file parsed again
    assert second.keys() == first.keys()
    for note_id, stored in second.items():
        was = first[note_id]
        assert (stored.note, stored.revision, stored.links, stored.stamp, stored.path) == (
            was.note,
            was.revision,
            was.links,
            was.stamp,
            was.path,
        )
        assert stored.digest_without_id == was.note.content_hash_without_id


def test_an_edit_that_keeps_size_and_mtime_is_still_read(
    folder: Path, tmp_path: Path, parses: list[int]
) -> None:
    cache = tmp_path / "cache"
    open_store(folder, cache).notes()
    path = folder / "note-007.md"
    before = path.stat()
    edited = path.read_bytes().replace(b"Body 7", b"Body X")
    path.write_bytes(edited)  # same size; the mtime put back: only the ctime tells
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size

    parses.clear()
    store = open_store(folder, cache)
    assert store.get("note-007") is not None
    assert store.get("note-007").note.body.startswith("Body X")  # type: ignore[union-attr]
    assert len(parses) == 1


def test_a_damaged_or_foreign_snapshot_is_ignored(
    folder: Path, tmp_path: Path, parses: list[int]
) -> None:
    cache = tmp_path / "cache"
    open_store(folder, cache).notes()
    written = snapshot_path(cache, "project", folder)
    data = written.read_bytes()
    for damaged in (data[: len(data) // 2], data[:8] + b"x" * 40, b"", b"not a snapshot"):
        written.write_bytes(damaged)
        parses.clear()
        assert len(open_store(folder, cache).notes()) == COUNT
        assert len(parses) == COUNT


def test_files_written_just_before_the_snapshot_are_left_out_racy(
    tmp_path: Path, parses: list[int]
) -> None:
    folder = tmp_path / "MEMORY"
    folder.mkdir()
    for number in range(COUNT):  # written now: their times could be shared by a next write
        note = Note(f"fresh-{number:03d}", f"Fresh {number}", "Body")
        (folder / f"{note.id}.md").write_bytes(serialise_note_bytes(note))
    cache = tmp_path / "cache"
    open_store(folder, cache).notes()
    parses.clear()
    assert len(open_store(folder, cache).notes()) == COUNT
    assert len(parses) == COUNT


def test_the_snapshot_is_private_in_a_private_home(folder: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    cache = home / "cache"
    open_store(folder, cache).notes()
    written = snapshot_path(cache, "project", folder)
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_few_new_files_do_not_rewrite_it(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    open_store(folder, cache).notes()
    written = snapshot_path(cache, "project", folder)
    before = written.stat().st_mtime_ns
    extra = Note("added-one", "Added", "Body")
    (folder / "added-one.md").write_bytes(serialise_note_bytes(extra))
    store = open_store(folder, cache)
    assert store.get("added-one") is not None
    assert written.stat().st_mtime_ns == before


def test_the_duplicate_check_reads_only_the_matching_file(
    folder: Path, tmp_path: Path, parses: list[int]
) -> None:
    cache = tmp_path / "cache"
    wanted = open_store(folder, cache).get("note-005")
    assert wanted is not None
    parses.clear()
    store = open_store(folder, cache)  # a new process: nothing in memory
    found = store.with_digest(wanted.digest_without_id)
    assert found is not None and found.id == "note-005" and found.note == wanted.note
    assert len(parses) == 1  # that file only, to be sure of it
    assert store.with_digest("sha256:" + "0" * 64) is None
    assert len(parses) == 1


def test_the_duplicate_check_sees_a_file_edited_since_the_snapshot(
    folder: Path, tmp_path: Path, parses: list[int]
) -> None:
    cache = tmp_path / "cache"
    before = open_store(folder, cache).get("note-007")
    assert before is not None
    path = folder / "note-007.md"
    stat_before = path.stat()
    edited = path.read_bytes().replace(b"Body 7", b"Body X")
    path.write_bytes(edited)  # same size, the mtime put back: only the ctime tells
    os.utime(path, ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))
    now = parse_note_bytes(edited)

    parses.clear()
    store = open_store(folder, cache)
    assert store.with_digest(before.digest_without_id) is None  # that content is gone
    found = store.with_digest(now.content_hash_without_id)
    assert found is not None and found.id == "note-007" and found.note.body.startswith("Body X")
    assert len(parses) == 1


def test_a_first_duplicate_check_reads_every_file_once_and_writes_the_snapshot(
    folder: Path, tmp_path: Path, parses: list[int]
) -> None:
    cache = tmp_path / "cache"
    first = open_store(folder, cache)
    assert first.with_digest("sha256:" + "0" * 64) is None
    assert len(parses) == COUNT
    assert snapshot_path(cache, "project", folder).exists()
    assert len(first.notes()) == COUNT and len(parses) == COUNT  # not read twice

    parses.clear()
    assert open_store(folder, cache).with_digest("sha256:" + "0" * 64) is None
    assert parses == []


def test_the_oldest_of_two_identical_notes_is_the_duplicate(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    twin = Note("a-twin", "Note 3", "Body 3 [[note-000]]")
    path = folder / "a-twin.md"
    path.write_bytes(serialise_note_bytes(twin))
    os.utime(path, ns=(OLD_NS, OLD_NS + 10**9))  # younger than note-003
    open_store(folder, cache).notes()
    found = open_store(folder, cache).with_digest(twin.content_hash_without_id)
    settled = open_store(folder, cache)
    settled.notes()
    assert found is not None and found.id == "note-003"
    assert settled.with_digest(twin.content_hash_without_id) == found
