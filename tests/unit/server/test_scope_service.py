"""The scope service over a store: manifest compare-and-swap, races and storage faults (06.4)."""

from __future__ import annotations

import threading

import pytest
from sync_server_support import make_settings, note_text, rev_of

from oharness.errors import StorageUnavailable
from oharness.server.planner import CommitLimits
from oharness.server.scope_service import ScopeService
from oharness.storage.in_memory import MemoryObjectStore, Operation, fail_on
from oharness.sync.protocol import (
    Change,
    CommitRequest,
    Quotas,
    SnapshotRequest,
    SyncScope,
    manifest_key,
    parse_manifest,
)

PREFIX = "users/alice/memory/"
LIMITS = CommitLimits(Quotas())


def engine(store: MemoryObjectStore, **overrides: object) -> ScopeService:
    return ScopeService(store, make_settings(**overrides), clock=lambda: 1000, sleep=lambda s: None)


def request(*changes: Change) -> CommitRequest:
    return CommitRequest(scope=SyncScope("user"), changes=changes)


def put(note_id: str, body: str = "Body.\n", base: str | None = None) -> Change:
    return Change("put", note_id, base, note_text(note_id, body))


def manifest_version(store: MemoryObjectStore) -> int:
    stored = store.get(manifest_key(PREFIX))
    return 0 if stored is None else parse_manifest(stored.data).version


def test_a_lost_race_is_replanned_against_the_winner() -> None:
    store = MemoryObjectStore()
    rival = engine(store)
    raced: list[bool] = []

    def before(op: Operation, key: str) -> None:
        if op == "put" and key.endswith("manifest.json") and not raced:
            raced.append(True)  # a concurrent writer wins just before our conditional write
            rival.commit(PREFIX, request(put("b-1")), LIMITS, "free")

    store.before = before
    result = engine(store).commit(PREFIX, request(put("a-1")), LIMITS, "free")
    assert result.version == 2 and [a.id for a in result.applied] == ["a-1"]
    stored = store.get(manifest_key(PREFIX))
    assert stored is not None
    assert set(parse_manifest(stored.data).notes) == {"a-1", "b-1"}


def test_a_lost_race_re_validates_the_change() -> None:
    store = MemoryObjectStore()
    first = engine(store).commit(PREFIX, request(put("a-1")), LIMITS, "free")
    base = first.applied[0].rev
    raced: list[bool] = []

    def before(op: Operation, key: str) -> None:
        if op == "put" and key.endswith("manifest.json") and not raced:
            raced.append(True)
            engine(store).commit(PREFIX, request(put("a-1", "theirs\n", base)), LIMITS, "free")

    store.before = before
    result = engine(store).commit(PREFIX, request(put("a-1", "mine\n", base)), LIMITS, "free")
    assert result.version == 2 and not result.applied
    assert result.rejected[0].reason == "conflict"
    assert result.rejected[0].current_rev == rev_of(note_text("a-1", "theirs\n"))


def test_too_much_contention_gives_up_retryably() -> None:
    store = MemoryObjectStore()
    rival = engine(store)
    count = [0]

    def before(op: Operation, key: str) -> None:
        if op == "put" and key.endswith("manifest.json") and threading.current_thread().name != "r":
            count[0] += 1
            worker = threading.Thread(
                target=rival.commit,
                args=(PREFIX, request(put(f"r-{count[0]}")), LIMITS, "free"),
                name="r",
            )
            worker.start()
            worker.join()

    store.before = before
    with pytest.raises(StorageUnavailable, match="retry"):
        engine(store, commit_attempts=4).commit(PREFIX, request(put("a-1")), LIMITS, "free")
    assert count[0] == 4 and manifest_version(store) == 4


def test_a_failure_between_objects_and_manifest_leaves_a_consistent_scope() -> None:
    store = MemoryObjectStore(before=fail_on("put", key_endswith="/manifest.json"))
    changes = request(put("a-1"), put("b-1"))
    with pytest.raises(StorageUnavailable):
        engine(store).commit(PREFIX, changes, LIMITS, "free")
    assert manifest_version(store) == 0
    orphans = store.list(PREFIX + "objects/")
    assert len(orphans) == 2  # written first, harmless
    retry = engine(store).commit(PREFIX, changes, LIMITS, "free")
    assert retry.version == 1 and len(retry.applied) == 2
    assert store.list(PREFIX + "objects/") == orphans  # the same content-addressed keys


def test_a_lost_answer_after_the_manifest_write_is_a_safe_retry() -> None:
    store = MemoryObjectStore(after=fail_on("put", key_endswith="/manifest.json"))
    changes = request(put("a-1"))
    with pytest.raises(StorageUnavailable):
        engine(store).commit(PREFIX, changes, LIMITS, "free")
    assert manifest_version(store) == 1  # it did land
    retry = engine(store).commit(PREFIX, changes, LIMITS, "free")
    assert retry.version == 1 and retry.applied[0].rev == rev_of(note_text("a-1", "Body.\n"))
    assert manifest_version(store) == 1  # no duplicated version


def test_a_failed_object_write_writes_no_manifest() -> None:
    store = MemoryObjectStore(before=fail_on("put", key_endswith=".md"))
    with pytest.raises(StorageUnavailable):
        engine(store).commit(PREFIX, request(put("a-1")), LIMITS, "free")
    assert store.get(manifest_key(PREFIX)) is None


def test_a_corrupt_manifest_is_unavailable_not_overwritten() -> None:
    store = MemoryObjectStore()
    store.put(manifest_key(PREFIX), b"{torn")
    with pytest.raises(StorageUnavailable, match="manifest"):
        engine(store).commit(PREFIX, request(put("a-1")), LIMITS, "free")
    stored = store.get(manifest_key(PREFIX))
    assert stored is not None and stored.data == b"{torn"


def test_missing_or_corrupt_objects_are_left_out_of_snapshots() -> None:
    store = MemoryObjectStore()
    scope_engine = engine(store)
    result = scope_engine.commit(PREFIX, request(put("a-1"), put("b-1")), LIMITS, "free")
    rev_a, rev_b = (a.rev for a in result.applied)
    store.delete(f"{PREFIX}objects/a-1/{rev_a}.md")
    store.put(f"{PREFIX}objects/b-1/{rev_b}.md", b"tampered")
    snapshot = scope_engine.snapshot(PREFIX, SnapshotRequest(SyncScope("user")), "free")
    assert len(snapshot.notes) == 2 and snapshot.objects == {}


def test_many_threads_on_one_store_lose_nothing() -> None:
    store = MemoryObjectStore()
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            for _ in range(50):
                try:
                    engine(store).commit(PREFIX, request(put(f"n-{index}")), LIMITS, "free")
                    return
                except StorageUnavailable:
                    continue
            raise AssertionError(f"writer {index} never got through")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    stored = store.get(manifest_key(PREFIX))
    assert stored is not None
    manifest = parse_manifest(stored.data)
    assert manifest.version == 20 and len(manifest.notes) == 20
    assert sorted(note.v for note in manifest.notes.values()) == list(range(1, 21))


def test_the_manifest_cache_never_hides_another_replicas_write() -> None:
    store = MemoryObjectStore()
    mine, other = engine(store), engine(store)
    mine.commit(PREFIX, request(put("a-1")), LIMITS, "free")
    full = SnapshotRequest(SyncScope("user"))
    assert len(mine.snapshot(PREFIX, full, "free").notes) == 1
    other.commit(PREFIX, request(put("b-1")), LIMITS, "free")
    assert len(mine.snapshot(PREFIX, full, "free").notes) == 2
    stored = store.get(manifest_key(PREFIX))
    assert stored is not None
    store.put(manifest_key(PREFIX), stored.data.replace(b'"version":2', b'"version":7'))
    assert mine.snapshot(PREFIX, full, "free").version == 7
    assert mine.commit(PREFIX, request(put("c-1")), LIMITS, "free").version == 8
