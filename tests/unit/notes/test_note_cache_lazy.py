"""What needs no note's content reads no note file: stamps, one note, the counts (01.7)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from oharness.notes import note_cache
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.store import NoteStore
from oharness.notes.stored import FileStamp

NOW_MS = 1_800_000_000_000
PAST_NS = (NOW_MS - 3_600_000) * 1_000_000


def _note(note_id: str, body: str = "Body.\n") -> bytes:
    return serialise_note_bytes(Note(note_id, f"Summary of {note_id}", body, ()))


def _age(*paths: Path) -> None:
    for path in paths:
        os.utime(path, ns=(PAST_NS, PAST_NS))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "MEMORY"
    folder.mkdir()
    for number in range(50):
        (folder / f"note-{number:02d}.md").write_bytes(_note(f"note-{number:02d}"))
    (folder / "broken.md").write_bytes(b"not a note at all")
    _age(*folder.iterdir(), folder)
    return folder


@pytest.fixture
def store(folder: Path, tmp_path: Path) -> NoteStore:
    return NoteStore(
        folder, scope="project", lock_path=tmp_path / "notes.lock", wall_clock=lambda: NOW_MS
    )


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The id of every note file the cache parses."""
    seen: list[str] = []

    def counting(data: bytes, **kwargs: Any) -> Note:
        note = parse_note_bytes(data, **kwargs)
        seen.append(note.id)
        return note

    monkeypatch.setattr(note_cache, "parse_note_bytes", counting)
    return seen


def test_stamps_and_counts_read_no_note(store: NoteStore, folder: Path, parsed: list[str]) -> None:
    stamps = store.stamps()
    assert store.file_count() == 51 and store.unloaded() == []
    assert parsed == []
    path = folder / "note-07.md"
    assert stamps["note-07"] == FileStamp.of(os.stat(path))
    # The listing cannot tell an unreadable file before reading it: a cache that holds no
    # entry for it asks get_one, which says there is no such note.
    assert "broken" in stamps and store.get_one("broken") is None


def test_one_note_reads_its_own_file_only(store: NoteStore, parsed: list[str]) -> None:
    first = store.get_one("note-03")
    assert first is not None and first.note.summary == "Summary of note-03"
    assert parsed == ["note-03"]
    assert store.get_one("note-03") is first and parsed == ["note-03"]
    assert store.get_one("missing") is None
    notes = {stored.id: stored for stored in store.notes()}  # the rest is read once, now
    assert len(notes) == 50 and notes["note-03"] is first
    assert sorted(parsed) == sorted({f"note-{n:02d}" for n in range(50)})
    assert [problem.path.name for problem in store.problems()] == ["broken.md"]


def test_a_file_rewritten_after_the_listing_is_read_as_it_is_now(
    store: NoteStore, folder: Path
) -> None:
    listed = store.stamps()
    generation = store.generation
    path = folder / "note-05.md"
    path.write_bytes(_note("note-05", "A longer body, written after the listing.\n"))
    one = store.get_one("note-05")
    assert one is not None and one.note.body.startswith("A longer body")
    assert one.stamp == FileStamp.of(os.stat(path)) != listed["note-05"]
    (folder / "note-06.md").write_bytes(_note("note-06", "Also rewritten, a longer body.\n"))
    notes = {stored.id: stored for stored in store.notes()}
    assert notes["note-06"].note.body.startswith("Also rewritten")
    assert notes["note-06"].stamp == FileStamp.of(os.stat(folder / "note-06.md"))
    assert store.generation > generation  # derived caches hear that it moved


def test_a_file_removed_after_the_listing_is_not_a_note(store: NoteStore, folder: Path) -> None:
    store.stamps()
    (folder / "note-09.md").unlink()
    assert store.get_one("note-09") is None
    assert "note-09" not in {stored.id for stored in store.notes()}


def test_ids_differing_by_case_are_settled_before_stamps_are_given(
    folder: Path, store: NoteStore, parsed: list[str]
) -> None:
    (folder / "Note-01.md").write_bytes(_note("Note-01"))
    os.utime(folder / "Note-01.md", ns=(PAST_NS + 10**9, PAST_NS + 10**9))  # the younger one
    stamps = store.stamps()
    assert "note-01" in stamps and "Note-01" not in stamps  # the older file keeps its place
    assert store.get_one("Note-01") is None
    assert any(problem.reason == "case_collision" for problem in store.problems())
