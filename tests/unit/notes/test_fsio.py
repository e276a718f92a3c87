"""Crash-safe writes: atomic_write, remove_file and temp names (spec 01.7)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from oharness.errors import StorageError
from oharness.fsio import atomic_write, is_temp_name, remove_file, temp_path_for


def _current_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _record_fsyncs(monkeypatch: pytest.MonkeyPatch, events: list[tuple[str, int, int]]) -> None:
    """Record (kind, inode, mode) of every fsynced descriptor, then really fsync it."""
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        events.append(("fsync", st.st_ino, st.st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)


class TestAtomicWrite:
    def test_creates_a_new_file_with_the_exact_bytes(self, tmp_path: Path) -> None:
        target = tmp_path / "note-1ab.md"
        data = b"---\n{}\n---\n\x00\xff binary-safe\r\n"

        atomic_write(target, data)

        assert target.read_bytes() == data
        assert os.listdir(tmp_path) == ["note-1ab.md"]

    def test_new_file_gets_the_umask_default_mode(self, tmp_path: Path) -> None:
        target = tmp_path / "note-1ab.md"

        atomic_write(target, b"x")

        assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_current_umask()

    def test_replaces_an_existing_file_and_keeps_its_permissions(self, tmp_path: Path) -> None:
        target = tmp_path / "note-1ab.md"
        target.write_bytes(b"old content that is longer than the new one")
        os.chmod(target, 0o640)

        atomic_write(target, b"new")

        assert target.read_bytes() == b"new"
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        assert os.listdir(tmp_path) == ["note-1ab.md"]

    def test_explicit_mode_is_used_for_the_file(self, tmp_path: Path) -> None:
        target = tmp_path / "secret.json"
        target.write_bytes(b"{}")
        os.chmod(target, 0o644)

        atomic_write(target, b'{"a":1}', mode=0o600)

        assert stat.S_IMODE(target.stat().st_mode) == 0o600

    def test_replacement_is_a_new_file_not_an_in_place_rewrite(self, tmp_path: Path) -> None:
        # A reader holding the old file open keeps seeing the complete old version.
        target = tmp_path / "note-1ab.md"
        target.write_bytes(b"old version")
        with target.open("rb") as reader:
            atomic_write(target, b"new version")
            assert reader.read() == b"old version"
        assert target.read_bytes() == b"new version"

    def test_fsyncs_the_file_before_the_rename_and_the_directory_after(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        target = tmp_path / "note-1ab.md"
        target.write_bytes(b"old")
        events: list[tuple[str, int, int]] = []
        _record_fsyncs(monkeypatch, events)
        real_replace = os.replace

        def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
            events.append(("replace", 0, 0))
            real_replace(src, dst)

        monkeypatch.setattr(os, "replace", replace)

        atomic_write(target, b"new")

        new_inode = target.stat().st_ino
        dir_inode = tmp_path.stat().st_ino
        kinds = [kind for kind, _, _ in events]
        assert kinds == ["fsync", "replace", "fsync"]
        (_, file_ino, file_mode), _, (_, dir_ino, dir_mode) = events
        # The descriptor fsynced first is the file that ends up at the target.
        assert file_ino == new_inode and stat.S_ISREG(file_mode)
        assert dir_ino == dir_inode and stat.S_ISDIR(dir_mode)

    def test_failed_rename_raises_storage_error_keeps_old_file_and_removes_temp(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        target = tmp_path / "note-1ab.md"
        target.write_bytes(b"old content")

        def refuse(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
            raise OSError(errno.EACCES, "Permission denied")

        monkeypatch.setattr(os, "replace", refuse)

        with pytest.raises(StorageError) as info:
            atomic_write(target, b"new content")

        assert info.value.details["path"] == str(target)
        assert "Permission denied" in info.value.message
        assert target.read_bytes() == b"old content"
        assert os.listdir(tmp_path) == ["note-1ab.md"]

    def test_failed_write_raises_storage_error_and_removes_temp(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        target = tmp_path / "note-1ab.md"
        target.write_bytes(b"old content")

        def disk_full(fd: int, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "write", disk_full)

        with pytest.raises(StorageError, match="No space left"):
            atomic_write(target, b"new content")

        assert target.read_bytes() == b"old content"
        assert os.listdir(tmp_path) == ["note-1ab.md"]

    def test_short_writes_are_completed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        real_write = os.write

        def dribble(fd: int, data: bytes | memoryview) -> int:
            return real_write(fd, bytes(data[:7]))

        monkeypatch.setattr(os, "write", dribble)
        target = tmp_path / "note-1ab.md"
        data = bytes(range(256)) * 3

        atomic_write(target, data)

        assert target.read_bytes() == data

    def test_missing_directory_raises_storage_error(self, tmp_path: Path) -> None:
        target = tmp_path / "missing" / "note-1ab.md"

        with pytest.raises(StorageError):
            atomic_write(target, b"x")

        assert os.listdir(tmp_path) == []


class TestTempNames:
    def test_temp_path_is_a_hidden_unique_sibling(self, tmp_path: Path) -> None:
        target = tmp_path / "note-1ab.md"

        names = {temp_path_for(target) for _ in range(50)}

        assert len(names) == 50
        for temp in names:
            assert temp.parent == tmp_path
            assert temp.name.startswith(".note-1ab.md.")
            assert is_temp_name(temp.name)

    @pytest.mark.parametrize("name", ["note-1ab.md", ".hidden.md", "note.tmp", "x.md.tmp"])
    def test_other_names_are_not_temp_names(self, name: str) -> None:
        assert not is_temp_name(name)


class TestRemoveFile:
    def test_removes_the_file_and_fsyncs_the_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        target = tmp_path / "note-1ab.md"
        target.write_bytes(b"x")
        events: list[tuple[str, int, int]] = []
        _record_fsyncs(monkeypatch, events)

        remove_file(target)

        assert not target.exists()
        assert [(ino, stat.S_ISDIR(mode)) for _, ino, mode in events] == [
            (tmp_path.stat().st_ino, True)
        ]

    def test_missing_file_is_fine(self, tmp_path: Path) -> None:
        remove_file(tmp_path / "gone.md")

        assert os.listdir(tmp_path) == []

    def test_refusal_raises_storage_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        target = tmp_path / "note-1ab.md"
        target.write_bytes(b"x")

        def refuse(path: str | os.PathLike[str]) -> None:
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr(os, "unlink", refuse)

        with pytest.raises(StorageError) as info:
            remove_file(target)

        assert info.value.details["path"] == str(target)
        assert target.read_bytes() == b"x"
