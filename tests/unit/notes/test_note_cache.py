"""The cost of a write: the store reads its folder at most once per write, and still sees
what other programs did (spec 01.7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oharness.notes import note_cache
from oharness.notes.format import Note, serialise_note_bytes
from oharness.notes.store import NoteStore

NOW_MS = 1_800_000_000_000


class Monotonic:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def _note(note_id: str, body: str = "Body.\n", tags: tuple[str, ...] = ()) -> bytes:
    return serialise_note_bytes(Note(note_id, f"Summary of {note_id}", body, tags))


@pytest.fixture
def monotonic() -> Monotonic:
    return Monotonic()


@pytest.fixture
def store(tmp_path: Path, monotonic: Monotonic) -> NoteStore:
    folder = tmp_path / "MEMORY"
    folder.mkdir()
    for number in range(300):
        (folder / f"old-{number:03d}.md").write_bytes(_note(f"old-{number:03d}"))
    past = (NOW_MS - 3_600_000) * 1_000_000
    for path in [*folder.iterdir(), folder]:
        os.utime(path, ns=(past, past))
    store = NoteStore(
        folder,
        scope="project",
        lock_path=tmp_path / "notes.lock",
        monotonic=monotonic,
        wall_clock=lambda: NOW_MS,
    )
    assert len(store.notes()) == 300
    return store


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every directory listing the store makes (``os.scandir``), by folder."""
    seen: list[str] = []
    real = os.scandir

    def counting(path: str | os.PathLike[str]) -> os._ScandirIterator[str]:
        seen.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    return seen


def test_writes_in_a_row_do_not_read_the_folder_again(
    store: NoteStore, monotonic: Monotonic, listings: list[str]
) -> None:
    for number in range(5):
        store.save_bytes(f"new-{number}", _note(f"new-{number}"), create=True)
        assert store.get(f"new-{number}") is not None
        assert len(store.notes()) == 301 + number
    assert listings == []


def test_spaced_writes_list_the_folder_at_most_once_each(
    store: NoteStore, monotonic: Monotonic, listings: list[str]
) -> None:
    for number in range(5):
        monotonic.now += 0.2  # past the racy window's recheck: the folder is listed once
        with store.locked():
            store.save_bytes(f"new-{number}", _note(f"new-{number}"), create=True)
        store.notes()
    assert len(listings) <= 5


def test_a_file_created_in_the_same_tick_as_our_write_is_seen(
    store: NoteStore, monotonic: Monotonic
) -> None:
    store.save_bytes("ours-1", _note("ours-1"), create=True)
    stamp = os.stat(store.directory).st_mtime_ns
    (store.directory / "theirs-1.md").write_bytes(_note("theirs-1"))
    os.utime(store.directory, ns=(stamp, stamp))  # the folder's mtime did not move
    monotonic.now += 0.1
    assert store.get("theirs-1") is not None


def test_a_file_another_program_adds_later_is_seen_at_once(
    store: NoteStore, monotonic: Monotonic
) -> None:
    store.save_bytes("ours-1", _note("ours-1"), create=True)
    (store.directory / "theirs-1.md").write_bytes(_note("theirs-1"))
    assert store.get("theirs-1") is not None
    (store.directory / "old-000.md").unlink()
    assert store.get("old-000") is None


def test_a_file_renamed_over_with_the_same_name_is_reloaded(
    store: NoteStore, monotonic: Monotonic
) -> None:
    """An editor's save (temp file renamed over the note) keeps the name, not the inode."""
    store.save_bytes("ours-1", _note("ours-1"), create=True)
    stamp = os.stat(store.directory).st_mtime_ns
    temp = store.directory / "editor-save.tmp"
    temp.write_bytes(_note("ours-1", "Edited by a person.\n"))
    os.replace(temp, store.directory / "ours-1.md")
    os.utime(store.directory, ns=(stamp, stamp))
    monotonic.now += 0.1
    stored = store.get("ours-1")
    assert stored is not None and stored.note.body == "Edited by a person.\n"


def test_latest_sees_an_in_place_rewrite_before_an_update(
    store: NoteStore, monotonic: Monotonic
) -> None:
    path = store.directory / "old-001.md"
    with path.open("r+b") as handle:  # in place: neither the folder nor the inode changes
        handle.write(_note("old-001", "Rewritten in place.\n", ("edited",)))
        handle.truncate()
    cached = store.get("old-001")
    assert cached is not None and cached.note.body == "Body.\n"  # not swept yet
    with store.locked():
        latest = store.latest("old-001")
    assert latest is not None and latest.note.tags == ("edited",)
    assert store.get("old-001") is latest


def test_a_folder_marked_stale_is_read_again_at_the_next_read(store: NoteStore) -> None:
    # The daemon's folder watcher saw the change (sizes, mtimes); the store's own checks
    # would find an in-place rewrite only at a later spot check.
    path = store.directory / "old-002.md"
    with path.open("r+b") as handle:
        handle.write(_note("old-002", "Rewritten in place.\n"))
        handle.truncate()
    cached = store.get("old-002")
    assert cached is not None and cached.note.body == "Body.\n"
    store.mark_stale()
    fresh = store.get("old-002")
    assert fresh is not None and fresh.note.body == "Rewritten in place.\n"


def test_own_changes_are_told_to_derived_caches(store: NoteStore) -> None:
    start = store.generation
    written = store.save_bytes("new-1", _note("new-1"), create=True)
    store.delete("old-002")
    assert store.changes_since(start) == [("new-1", written), ("old-002", None)]
    assert store.changes_since(store.generation) == []
    store.refresh(full=True)  # nothing changed: the journal stays
    assert store.changes_since(start) == [("new-1", written), ("old-002", None)]


def test_after_a_sweep_that_found_changes_the_journal_says_unknown(store: NoteStore) -> None:
    start = store.generation
    store.save_bytes("new-1", _note("new-1"), create=True)
    (store.directory / "theirs-1.md").write_bytes(_note("theirs-1"))
    store.refresh(full=True)
    assert store.changes_since(start) is None
    assert store.changes_since(store.generation) == []


def test_a_long_journal_forgets_its_oldest_changes(
    store: NoteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(note_cache, "_JOURNAL_MAX", 4)
    start = store.generation
    for number in range(6):
        store.save_bytes(f"new-{number}", _note(f"new-{number}"), create=True)
    assert store.changes_since(start) is None
    recent = store.changes_since(store.generation - 2)
    assert recent is not None and [note_id for note_id, _ in recent] == ["new-4", "new-5"]
