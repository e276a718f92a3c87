"""A folder's signature (names, sizes, mtimes of its note files): what the daemon's folder
watch compares once a second, so every kind of change to a note file must show in it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oharness.daemon.background.folder_watch import folder_signature


def _note(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_signature_names_every_note_file_with_its_size_and_mtime(tmp_path: Path) -> None:
    b = _note(tmp_path, "b-note.md", "second")
    a = _note(tmp_path, "a-note.md", "first")
    _note(tmp_path, "notes.txt", "not a note")
    (tmp_path / "sub.d").mkdir()
    expected = tuple((path.name, path.stat().st_size, path.stat().st_mtime_ns) for path in (a, b))
    assert folder_signature(tmp_path) == expected


def test_an_edit_in_place_an_added_and_a_removed_note_all_change_it(tmp_path: Path) -> None:
    note = _note(tmp_path, "a-note.md", "first")
    before = folder_signature(tmp_path)
    with note.open("a", encoding="utf-8") as handle:  # in place: the folder's mtime stays
        handle.write(" and more")
    edited = folder_signature(tmp_path)
    assert edited != before
    _note(tmp_path, "b-note.md", "x")
    added = folder_signature(tmp_path)
    assert [name for name, _, _ in added] == ["a-note.md", "b-note.md"]
    (tmp_path / "b-note.md").unlink()
    assert folder_signature(tmp_path) == edited


def test_a_file_gone_between_listing_and_stat_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _note(tmp_path, "a-note.md", "first")
    _note(tmp_path, "b-note.md", "second")
    real = os.stat

    def vanishing(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if path == "a-note.md":
            raise FileNotFoundError(path)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("oharness.daemon.background.folder_watch.os.stat", vanishing)
    monkeypatch.setattr("oharness.daemon.background.folder_watch.os.lstat", vanishing)
    monkeypatch.setattr("oharness.daemon.background.folder_watch.os.supports_dir_fd", {vanishing})
    assert [name for name, _, _ in folder_signature(tmp_path)] == ["b-note.md"]


def test_a_missing_folder_has_an_empty_signature(tmp_path: Path) -> None:
    assert folder_signature(tmp_path / "gone") == ()


def test_without_stat_relative_to_a_folder_the_signature_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _note(tmp_path, "a-note.md", "first")
    _note(tmp_path, "b-note.md", "second")
    expected = folder_signature(tmp_path)
    watch = "oharness.daemon.background.folder_watch"
    monkeypatch.setattr(f"{watch}.os.supports_dir_fd", set())  # as on Windows
    assert folder_signature(tmp_path) == expected
