"""The file backend's conditional read: one ``stat`` for a settled file, a full read otherwise."""

from __future__ import annotations

import builtins
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import oharness.storage.file as file_module
from oharness.storage.file import SETTLED_NS, FileObjectStore
from oharness.storage.object_store import NOT_MODIFIED, StoredObject

KEY = "users/u1/memory/manifest.json"


def later(seconds: float) -> Callable[[], int]:
    """A clock running ``seconds`` ahead of the real one (file times are real)."""
    return lambda: time.time_ns() + int(seconds * 1e9)


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file the file backend opens, by path."""
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(path: object, *args: object, **kwargs: object) -> object:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(file_module, "open", counting_open, raising=False)
    return opened


def test_a_settled_file_is_answered_from_a_stat_without_reading_it(
    tmp_path: Path, opens: list[str]
) -> None:
    store = FileObjectStore(tmp_path, clock_ns=later(SETTLED_NS / 1e9 + 1))
    etag = store.put(KEY, b'{"version": 1}')
    assert store.get_if_changed(KEY, etag) is NOT_MODIFIED  # reads once, remembers
    opens.clear()
    for _ in range(3):
        assert store.get_if_changed(KEY, etag) is NOT_MODIFIED
    assert opens == []


def test_a_young_file_is_read_again_on_every_conditional_read(
    tmp_path: Path, opens: list[str]
) -> None:
    store = FileObjectStore(tmp_path)  # the real clock: the file was written just now
    etag = store.put(KEY, b'{"version": 1}')
    opens.clear()
    for _ in range(3):
        assert store.get_if_changed(KEY, etag) is NOT_MODIFIED
    assert len(opens) == 3


def test_another_process_replacing_the_file_is_seen_at_once(tmp_path: Path) -> None:
    reader = FileObjectStore(tmp_path, clock_ns=later(3600))
    writer = FileObjectStore(tmp_path)
    first = writer.put(KEY, b"AAAA")
    assert reader.get_if_changed(KEY, first) is NOT_MODIFIED
    second = writer.put(KEY, b"BBBB", if_match=first)  # the same size
    assert reader.get_if_changed(KEY, first) == StoredObject(b"BBBB", second)


def test_restoring_an_older_copy_with_its_old_times_is_seen(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path / "live", clock_ns=later(3600))
    first = store.put(KEY, b'{"version": 1}')
    backup = tmp_path / "backup.json"
    shutil.copy2(tmp_path / "live" / KEY, backup)  # keeps the modification time
    second = store.put(KEY, b'{"version": 2}', if_match=first)
    assert store.get_if_changed(KEY, second) is NOT_MODIFIED
    # An operator restores the backup as `cp -p` or `rsync -a` would: old bytes, old mtime.
    restored = tmp_path / "live" / "users/u1/memory/.restore.tmp"
    shutil.copy2(backup, restored)
    os.replace(restored, tmp_path / "live" / KEY)
    assert store.get_if_changed(KEY, second) == StoredObject(b'{"version": 1}', first)


def test_an_edit_in_place_is_seen(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path, clock_ns=later(3600))
    etag = store.put(KEY, b"same size 1")
    assert store.get_if_changed(KEY, etag) is NOT_MODIFIED
    path = tmp_path / KEY
    status = path.stat()
    path.write_bytes(b"same size 2")
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))  # even with the old mtime
    found = store.get_if_changed(KEY, etag)
    assert isinstance(found, StoredObject) and found.data == b"same size 2"


def test_a_directory_where_the_key_should_be_is_absent(tmp_path: Path) -> None:
    (tmp_path / KEY).mkdir(parents=True)
    assert FileObjectStore(tmp_path).get_if_changed(KEY, "x") is None
