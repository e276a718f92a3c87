"""Which temp files the note store removes, and when (01.7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oharness.fsio import temp_path_for
from oharness.notes.format import Note
from oharness.notes.store import NoteStore
from oharness.notes.tempfiles import STALE_TEMP_AGE_MS, is_own_temp_name


def test_only_names_our_writes_produce_are_ours(tmp_path: Path) -> None:
    for _ in range(20):
        assert is_own_temp_name(temp_path_for(tmp_path / "note-1ab.md").name)
    assert is_own_temp_name(temp_path_for(tmp_path / "été ✓-1ab.md").name)


@pytest.mark.parametrize(
    "name", [".draft.tmp", ".note.md.1234.tmp", "note.md.0123456789ab.tmp", ".x.0123456789AB.tmp"]
)
def test_other_hidden_tmp_files_are_not_ours(name: str) -> None:
    assert not is_own_temp_name(name)


def test_taking_the_lock_removes_stale_temp_files_only(tmp_path: Path) -> None:
    notes_dir = tmp_path / "MEMORY"
    notes_dir.mkdir()
    now = 1_800_000_000_000
    store = NoteStore(
        notes_dir, scope="project", lock_path=tmp_path / "lock", wall_clock=lambda: now
    )
    stale = temp_path_for(notes_dir / "a-1ab.md")
    fresh = temp_path_for(notes_dir / "b-1ab.md")
    foreign = notes_dir / ".draft.tmp"
    for path, age_ms in (
        (stale, STALE_TEMP_AGE_MS),
        (fresh, STALE_TEMP_AGE_MS - 1_000),
        (foreign, 10 * STALE_TEMP_AGE_MS),
    ):
        path.write_bytes(b"half")
        ns = (now - age_ms) * 1_000_000
        os.utime(path, ns=(ns, ns))
    assert store.is_stale_temp(stale) and not store.is_stale_temp(fresh)
    assert sorted(store.stray_temp_files()) == sorted([stale, fresh, foreign])
    store.save(Note(id="c-1ab", summary="A write", body="x\n"), create=True)
    assert not stale.exists() and fresh.exists() and foreign.exists()
    assert sorted(store.stray_temp_files()) == sorted([fresh, foreign])
    assert store.remove_stale_temp_files() == []
