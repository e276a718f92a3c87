"""What the file backend adds to the contract: its layout on disk, locks, and failures."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import filelock
import pytest

from oharness.errors import PreconditionFailed, StorageUnavailable, ValidationError
from oharness.storage.file import LOCK_DIRECTORY, LOCK_STRIPES, FileObjectStore


def test_objects_are_plain_files_under_the_root(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path)
    etag = store.put("users/u1/memory/manifest.json", b'{"version": 1}')
    assert (tmp_path / "users/u1/memory/manifest.json").read_bytes() == b'{"version": 1}'
    assert etag == hashlib.sha256(b'{"version": 1}').hexdigest()


def test_a_file_written_by_hand_is_an_object_with_a_content_etag(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir/hand.md").write_bytes(b"by hand")
    store = FileObjectStore(tmp_path)
    found = store.get("dir/hand.md")
    assert found is not None
    assert found.etag == hashlib.sha256(b"by hand").hexdigest()
    store.put("dir/hand.md", b"replaced", if_match=found.etag)


def test_a_relative_root_is_made_absolute_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = FileObjectStore(Path("data"))
    monkeypatch.chdir("/")
    store.put("k", b"x")
    assert (tmp_path / "data/k").read_bytes() == b"x"


def test_list_ignores_temp_files_lock_files_and_symlinks(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path)
    store.put("a/real", b"x")
    (tmp_path / "a/.real.0123abcd.tmp").write_bytes(b"left by a crash")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret").write_bytes(b"s")
    (tmp_path / "a/link").symlink_to(tmp_path / "outside/secret")
    (tmp_path / "a/dirlink").symlink_to(tmp_path / "outside")
    assert (tmp_path / LOCK_DIRECTORY).is_dir()
    assert store.list("") == ["a/real", "outside/secret"]
    assert store.list("a/") == ["a/real"]


def test_locks_are_a_bounded_set_of_files(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path)
    for index in range(2000):
        store.delete(f"k/{index}")  # takes the key's lock, like a write, without the fsync
    locks = list((tmp_path / LOCK_DIRECTORY).iterdir())
    assert 0 < len(locks) <= LOCK_STRIPES


def test_delete_prunes_directories_it_left_empty_but_never_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = FileObjectStore(root)
    store.put("users/u1/memory/objects/n1/r1.md", b"x")
    store.put("users/u1/memory/manifest.json", b"m")
    store.delete("users/u1/memory/objects/n1/r1.md")
    assert not (root / "users/u1/memory/objects").exists()
    assert (root / "users/u1/memory/manifest.json").exists()
    store.delete("users/u1/memory/manifest.json")
    assert sorted(path.name for path in root.iterdir()) == [LOCK_DIRECTORY]


def test_a_key_cannot_also_be_a_directory_of_keys(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path)
    store.put("a/b", b"file")
    with pytest.raises(ValidationError, match="cannot hold a key and keys below it"):
        store.put("a/b/c", b"below a file")
    with pytest.raises(ValidationError, match="cannot hold a key and keys below it"):
        store.put("a", b"over a directory")
    assert store.get("a/b/c") is None
    assert store.get("a") is None
    store.delete("a")
    store.delete("a/b/c")
    assert store.list("") == ["a/b"]


def test_a_held_lock_times_out_as_unavailable(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path, lock_timeout=0.2)
    store.put("k", b"x")  # creates the lock directory
    held = [
        filelock.FileLock(path, thread_local=False)
        for path in (tmp_path / LOCK_DIRECTORY).iterdir()
    ]
    for lock in held:
        lock.acquire()
    try:
        with pytest.raises(StorageUnavailable, match="timed out"):
            store.put("k", b"y")
    finally:
        for lock in held:
            lock.release()
    assert store.put("k", b"y")


def test_a_root_that_is_a_file_makes_every_operation_unavailable(tmp_path: Path) -> None:
    root = tmp_path / "not-a-directory"
    root.write_bytes(b"")
    store = FileObjectStore(root)
    with pytest.raises(StorageUnavailable, match="not-a-directory"):
        store.ping()
    with pytest.raises(StorageUnavailable):
        store.put("k", b"x")
    with pytest.raises(StorageUnavailable):
        store.delete("k")


def test_ping_creates_a_missing_root_and_leaves_nothing_behind(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path / "new" / "root")
    store.ping()
    assert list((tmp_path / "new" / "root").iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_an_unreadable_object_is_unavailable_not_absent(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path)
    store.put("k", b"x")
    (tmp_path / "k").chmod(0)
    with pytest.raises(StorageUnavailable, match="could not read k"):
        store.get("k")


def test_a_broken_lock_directory_makes_writes_unavailable(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path)
    store.put("k", b"x")
    # A file where the lock directory should be: locking fails as on a broken disk.
    lock_directory = tmp_path / LOCK_DIRECTORY
    for path in lock_directory.iterdir():
        path.unlink()
    lock_directory.rmdir()
    lock_directory.write_bytes(b"")
    with pytest.raises(StorageUnavailable, match="could not lock"):
        store.put("other", b"y")


def test_puts_and_deletes_racing_in_one_directory_never_fail(tmp_path: Path) -> None:
    """A delete prunes the directory a concurrent put is about to write into; the put retries."""
    stores = [FileObjectStore(tmp_path) for _ in range(4)]
    errors: list[BaseException] = []

    def churn(index: int) -> None:
        store = stores[index]
        try:
            for round_number in range(150):
                key = f"shared/dir/{index}"
                store.put(key, f"{round_number}".encode())
                store.delete(key)
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert stores[0].list("") == []


def test_two_handles_on_one_directory_exclude_each_other(tmp_path: Path) -> None:
    first, second = FileObjectStore(tmp_path), FileObjectStore(tmp_path)
    etag = first.put("m", b"v1", if_none_match=True)
    second.put("m", b"v2", if_match=etag)
    with pytest.raises(PreconditionFailed):
        first.put("m", b"v2 from first", if_match=etag)
