"""The object store contract (oharness.storage.object_store), run against every backend.

Each test gets a fresh, empty store. ``Backend.open()`` gives another handle on the same
storage, as a second sync-server process would have (a new FileObjectStore on the same
directory, a new S3 client on the same bucket prefix).
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from oharness.errors import PreconditionFailed, StorageUnavailable, ValidationError
from oharness.storage.file import FileObjectStore
from oharness.storage.in_memory import MemoryObjectStore, fail_on
from oharness.storage.object_store import NOT_MODIFIED, ObjectStore, StoredObject


@dataclass
class Backend:
    name: str
    open: Callable[[], ObjectStore]
    #: how hard the concurrency tests push: SeaweedFS makes writers that lose a race for one
    #: key wait in 1-second steps, so its rounds cost seconds instead of milliseconds
    race_rounds: int = 5
    counter_increments: int = 20


@pytest.fixture(
    params=[
        pytest.param("file"),
        pytest.param("memory"),
        pytest.param("s3", marks=pytest.mark.service),
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    name: str = request.param
    if name == "file":
        root = tmp_path / "objects"
        return Backend(name, lambda: FileObjectStore(root))
    if name == "memory":
        shared = MemoryObjectStore()
        return Backend(name, lambda: shared)
    server = request.getfixturevalue("s3_server")
    prefix = f"contract/{uuid.uuid4().hex}"
    handles = iter([server.store(prefix)])

    def open_s3() -> ObjectStore:
        # The first handle shares the session's client; later ones act as other processes.
        opened: ObjectStore = next(handles, None) or server.store(prefix, new_client=True)
        return opened

    return Backend(name, open_s3, race_rounds=2, counter_increments=8)


@pytest.fixture
def store(backend: Backend) -> ObjectStore:
    opened = backend.open()
    assert isinstance(opened, ObjectStore)
    return opened


def read(store: ObjectStore, key: str) -> StoredObject:
    found = store.get(key)
    assert found is not None, f"{key} should exist"
    return found


# -- get and put ---------------------------------------------------------------------------


def test_get_of_an_absent_key_is_none(store: ObjectStore) -> None:
    assert store.get("users/u1/memory/manifest.json") is None


def test_put_then_get_round_trips_bytes_and_etag(store: ObjectStore) -> None:
    etag = store.put("users/u1/memory/manifest.json", b'{"version": 1}')
    found = read(store, "users/u1/memory/manifest.json")
    assert found == StoredObject(b'{"version": 1}', etag)
    assert etag


def test_etag_changes_with_the_content_and_is_stable_without(store: ObjectStore) -> None:
    first = store.put("k", b"one")
    assert read(store, "k").etag == first
    assert read(store, "k").etag == first
    second = store.put("k", b"two")
    assert second != first
    assert read(store, "k").etag == second


# -- conditional get ----------------------------------------------------------------------


def test_a_conditional_get_with_the_current_etag_is_not_modified(store: ObjectStore) -> None:
    etag = store.put("users/u1/memory/manifest.json", b'{"version": 1}')
    assert store.get_if_changed("users/u1/memory/manifest.json", etag) is NOT_MODIFIED
    assert store.get_if_changed("users/u1/memory/manifest.json", etag) is NOT_MODIFIED


def test_a_conditional_get_returns_the_new_bytes_once_they_changed(backend: Backend) -> None:
    writer, reader = backend.open(), backend.open()
    old = writer.put("k/manifest.json", b"version one")
    assert reader.get_if_changed("k/manifest.json", old) is NOT_MODIFIED
    new = writer.put("k/manifest.json", b"version two", if_match=old)
    assert reader.get_if_changed("k/manifest.json", old) == StoredObject(b"version two", new)
    assert reader.get_if_changed("k/manifest.json", new) is NOT_MODIFIED
    # Back to the first bytes: the first ETag matches again, whatever happened in between.
    again = writer.put("k/manifest.json", b"version one", if_match=new)
    assert reader.get_if_changed("k/manifest.json", new) == StoredObject(b"version one", again)


def test_a_conditional_get_of_an_absent_or_deleted_key_is_none(backend: Backend) -> None:
    writer, reader = backend.open(), backend.open()
    assert reader.get_if_changed("gone/manifest.json", "0" * 32) is None
    etag = writer.put("gone/manifest.json", b"here")
    assert reader.get_if_changed("gone/manifest.json", etag) is NOT_MODIFIED
    writer.delete("gone/manifest.json")
    assert reader.get_if_changed("gone/manifest.json", etag) is None


def test_a_conditional_get_with_a_stranger_etag_returns_the_object(store: ObjectStore) -> None:
    etag = store.put("k", b"bytes")
    assert store.get_if_changed("k", '"not-the-etag"') == StoredObject(b"bytes", etag)


def test_a_second_handle_sees_the_writes_of_the_first(backend: Backend) -> None:
    writer, reader = backend.open(), backend.open()
    etag = writer.put("shared/key", b"from the writer")
    assert reader.get("shared/key") == StoredObject(b"from the writer", etag)


def test_binary_bytes_and_the_empty_object_round_trip(store: ObjectStore) -> None:
    every_byte = bytes(range(256)) * 4
    store.put("bin/all-bytes", every_byte)
    store.put("bin/empty", b"")
    assert read(store, "bin/all-bytes").data == every_byte
    empty = read(store, "bin/empty")
    assert empty.data == b""
    assert store.put("bin/empty", b"now full", if_match=empty.etag)


def test_a_large_object_round_trips(store: ObjectStore) -> None:
    data = random.Random(7).randbytes(5 * 1024 * 1024)
    etag = store.put("big/object.md", data)
    assert read(store, "big/object.md") == StoredObject(data, etag)


def test_ping_succeeds_on_a_working_store(store: ObjectStore) -> None:
    store.ping()


# -- conditional writes ----------------------------------------------------------------------


def test_create_only_creates_an_absent_key(store: ObjectStore) -> None:
    etag = store.put("m", b"created", if_none_match=True)
    assert read(store, "m") == StoredObject(b"created", etag)


def test_create_only_on_a_present_key_fails_and_changes_nothing(store: ObjectStore) -> None:
    etag = store.put("m", b"original")
    with pytest.raises(PreconditionFailed):
        store.put("m", b"intruder", if_none_match=True)
    assert read(store, "m") == StoredObject(b"original", etag)


def test_a_stale_etag_fails_and_changes_nothing(store: ObjectStore) -> None:
    stale = store.put("m", b"version 1")
    current = store.put("m", b"version 2")
    with pytest.raises(PreconditionFailed):
        store.put("m", b"lost update", if_match=stale)
    assert read(store, "m") == StoredObject(b"version 2", current)


def test_if_match_on_an_absent_key_fails_and_creates_nothing(store: ObjectStore) -> None:
    etag = store.put("other", b"some content")
    store.delete("other")
    with pytest.raises(PreconditionFailed):
        store.put("other", b"resurrected", if_match=etag)
    assert store.get("other") is None


def test_a_chain_of_compare_and_swaps(store: ObjectStore) -> None:
    etag = store.put("manifest.json", b"v1", if_none_match=True)
    for version in range(2, 6):
        previous = etag
        etag = store.put("manifest.json", f"v{version}".encode(), if_match=etag)
        assert etag != previous
        with pytest.raises(PreconditionFailed):
            store.put("manifest.json", b"late writer", if_match=previous)
    assert read(store, "manifest.json") == StoredObject(b"v5", etag)


def test_a_put_with_both_conditions_is_refused(store: ObjectStore) -> None:
    etag = store.put("m", b"x")
    with pytest.raises(ValidationError):
        store.put("m", b"y", if_match=etag, if_none_match=True)
    assert read(store, "m").data == b"x"


# -- delete and list -------------------------------------------------------------------------


def test_delete_removes_and_deleting_an_absent_key_is_fine(store: ObjectStore) -> None:
    store.delete("never/written")
    store.put("a/b/c", b"x")
    store.put("a/b/d", b"y")
    store.delete("a/b/c")
    store.delete("a/b/c")
    assert store.get("a/b/c") is None
    assert store.list("a/") == ["a/b/d"]
    store.put("a/b/c", b"again", if_none_match=True)
    assert read(store, "a/b/c").data == b"again"


LAYOUT = [
    "users/u1/memory/manifest.json",
    "users/u1/memory/objects/note-a/0123.md",
    "users/u1/memory/objects/note-b/4567.md",
    "users/u1/projects/p1/memory/manifest.json",
    "users/u12/memory/manifest.json",
    "users/u2/memory/manifest.json",
    "erased/users/u3.json",
    "top-level",
]


def test_list_returns_every_key_under_a_prefix_sorted_without_duplicates(
    store: ObjectStore,
) -> None:
    for key in reversed(LAYOUT):
        store.put(key, key.encode())
    store.put(LAYOUT[0], b"rewritten")
    assert store.list("") == sorted(LAYOUT)
    assert store.list("users/u1/memory/") == [
        "users/u1/memory/manifest.json",
        "users/u1/memory/objects/note-a/0123.md",
        "users/u1/memory/objects/note-b/4567.md",
    ]
    assert store.list("users/u1/memory/objects/") == [
        "users/u1/memory/objects/note-a/0123.md",
        "users/u1/memory/objects/note-b/4567.md",
    ]
    assert store.list("users/u1") == sorted(k for k in LAYOUT if k.startswith("users/u1"))
    assert "users/u12/memory/manifest.json" not in store.list("users/u1/")
    assert store.list("erased/") == ["erased/users/u3.json"]
    assert store.list("top-level") == ["top-level"]
    assert store.list("nothing/here/") == []
    assert store.list("users/u1/memory/manifest.json") == ["users/u1/memory/manifest.json"]


# -- keys ------------------------------------------------------------------------------------

BAD_KEYS = [
    "",
    "/absolute",
    "trailing/",
    "double//slash",
    ".",
    "..",
    "a/./b",
    "a/../b",
    "../escape",
    ".hidden",
    "a/.hidden",
    "back\\slash",
    "nul\x00byte",
    "new\nline",
    "x" * 256,
    "/".join(["abcdefgh"] * 120),
]


@pytest.mark.parametrize("key", BAD_KEYS, ids=range(len(BAD_KEYS)))
def test_invalid_keys_are_refused_before_touching_storage(store: ObjectStore, key: str) -> None:
    with pytest.raises(ValidationError):
        store.get(key)
    with pytest.raises(ValidationError):
        store.put(key, b"x")
    with pytest.raises(ValidationError):
        store.delete(key)
    assert store.list("") == []


@pytest.mark.parametrize("prefix", ["/a", "a//", "../", "a/../", ".locks", "a/.", "a\\b"])
def test_invalid_prefixes_are_refused(store: ObjectStore, prefix: str) -> None:
    with pytest.raises(ValidationError):
        store.list(prefix)


def test_unusual_but_valid_keys_work(store: ObjectStore) -> None:
    keys = ["a.b", "a/b.c.d", "ünïcödé/ключ", "with space/x", "dots.../x", "a-_~!$'()*+,;=@"]
    for key in keys:
        store.put(key, key.encode())
    assert store.list("") == sorted(keys)
    for key in keys:
        assert read(store, key).data == key.encode()


# -- concurrency -----------------------------------------------------------------------------


def test_racing_conditional_writes_have_exactly_one_winner_per_round(backend: Backend) -> None:
    writers, rounds = 16, backend.race_rounds
    handles = [backend.open() for _ in range(2)]
    key = "race/manifest.json"
    barrier = threading.Barrier(writers)

    def attempt(index: int, expected: str | None, round_number: int) -> str | None:
        handle = handles[index % len(handles)]
        # Distinct bytes every round: with content-hash ETags, rewriting the same bytes keeps
        # the ETag (and the state), so an equal write would rightly pass a later if_match.
        data = f"round {round_number} writer {index}".encode()
        barrier.wait()
        try:
            if expected is None:
                return handle.put(key, data, if_none_match=True)
            return handle.put(key, data, if_match=expected)
        except PreconditionFailed:
            return None

    expected: str | None = None
    with ThreadPoolExecutor(writers) as pool:
        for round_number in range(rounds):
            results = list(
                pool.map(attempt, range(writers), [expected] * writers, [round_number] * writers)
            )
            winners = [(index, etag) for index, etag in enumerate(results) if etag is not None]
            assert len(winners) == 1, f"round {round_number} winners: {winners}"
            index, etag = winners[0]
            winner_data = f"round {round_number} writer {index}".encode()
            assert read(handles[0], key) == StoredObject(winner_data, etag)
            expected = etag


def increment(store: ObjectStore, key: str) -> int:
    """Add one to the counter at ``key`` with a read-modify-write retry loop; return retries."""
    retries = 0
    while True:
        current = store.get(key)
        try:
            if current is None:
                store.put(key, b"1", if_none_match=True)
            else:
                store.put(key, str(int(current.data) + 1).encode(), if_match=current.etag)
            return retries
        except PreconditionFailed:
            retries += 1


def test_a_read_modify_write_counter_loses_no_update(backend: Backend) -> None:
    threads, increments = 8, backend.counter_increments
    handles = [backend.open() for _ in range(2)]

    def work(index: int) -> int:
        handle = handles[index % len(handles)]
        return sum(increment(handle, "counter") for _ in range(increments))

    with ThreadPoolExecutor(threads) as pool:
        retries = sum(pool.map(work, range(threads)))
    assert read(handles[0], "counter").data == str(threads * increments).encode()
    assert retries >= 0


COUNTER_WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from oharness.errors import PreconditionFailed
    from oharness.storage.file import FileObjectStore

    store = FileObjectStore(Path(sys.argv[1]))
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(int(sys.argv[2])):
        while True:
            current = store.get("counter")
            try:
                if current is None:
                    store.put("counter", b"1", if_none_match=True)
                else:
                    new = str(int(current.data) + 1).encode()
                    store.put("counter", new, if_match=current.etag)
                break
            except PreconditionFailed:
                pass
    """
)


def test_file_store_processes_sharing_a_directory_lose_no_update(tmp_path: Path) -> None:
    root = tmp_path / "objects"
    processes, increments = 3, 40
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", COUNTER_WORKER, str(root), str(increments)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    for worker in workers:  # start them together so they really race
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.close()
    for worker in workers:
        assert worker.wait(timeout=60) == 0
        assert worker.stdout is not None
        worker.stdout.close()
    assert read(FileObjectStore(root), "counter").data == str(processes * increments).encode()


# -- fault injection (the memory backend's hooks) --------------------------------------------


def test_a_fault_between_objects_and_manifest_leaves_the_manifest_untouched() -> None:
    store = MemoryObjectStore()
    manifest = store.put("users/u/memory/manifest.json", b"version 1")
    store.before = fail_on("put", key_endswith="/manifest.json")
    store.put("users/u/memory/objects/n/r.md", b"note body")
    with pytest.raises(StorageUnavailable):
        store.put("users/u/memory/manifest.json", b"version 2", if_match=manifest)
    assert read(store, "users/u/memory/manifest.json") == StoredObject(b"version 1", manifest)
    assert read(store, "users/u/memory/objects/n/r.md").data == b"note body"
    # The fault was for one call only: a retry goes through.
    store.put("users/u/memory/manifest.json", b"version 2", if_match=manifest)
    assert read(store, "users/u/memory/manifest.json").data == b"version 2"


def test_a_lost_response_after_a_write_leaves_the_write_applied() -> None:
    store = MemoryObjectStore(after=fail_on("put", key_endswith="manifest.json"))
    with pytest.raises(StorageUnavailable):
        store.put("manifest.json", b"landed", if_none_match=True)
    assert read(store, "manifest.json").data == b"landed"
    with pytest.raises(PreconditionFailed):  # the retry finds its own write
        store.put("manifest.json", b"landed", if_none_match=True)
