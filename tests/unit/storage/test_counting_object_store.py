"""The counting wrapper: every call counted by kind, with the payload bytes it moved."""

from __future__ import annotations

import pytest

from oharness.errors import PreconditionFailed, StorageUnavailable
from oharness.storage.counting import KINDS, READS, CountingObjectStore, OperationCount
from oharness.storage.in_memory import MemoryObjectStore, fail_on
from oharness.storage.object_store import NOT_MODIFIED, ObjectStore


def test_it_is_an_object_store_and_starts_at_zero() -> None:
    store = CountingObjectStore(MemoryObjectStore())
    assert isinstance(store, ObjectStore)
    assert store.counts() == {kind: OperationCount() for kind in KINDS}


def test_each_kind_is_counted_with_its_bytes() -> None:
    store = CountingObjectStore(MemoryObjectStore())
    etag = store.put("a/one", b"12345")
    store.put("a/one", b"123456789", if_match=etag)
    store.put("a/two", b"xy", if_none_match=True)
    assert store.get("a/one") is not None
    assert store.get("a/absent") is None
    current = store.get("a/one")
    assert current is not None
    assert store.get_if_changed("a/one", current.etag) is NOT_MODIFIED
    assert store.get_if_changed("a/one", etag) is not None
    assert store.list("a/") == ["a/one", "a/two"]
    store.delete("a/two")
    store.ping()
    counts = store.counts()
    assert counts["put"] == OperationCount(1, 0, 5)
    assert counts["conditional_put"] == OperationCount(2, 0, 11)
    assert counts["get"] == OperationCount(3, 18, 0)
    assert counts["conditional_get"] == OperationCount(2, 9, 0)  # the 304 moved nothing
    assert counts["list"] == OperationCount(1, 10, 0)
    assert counts["delete"].calls == 1 and counts["ping"].calls == 1
    assert store.total(READS).calls == 5
    assert store.total().calls == 11


def test_failed_calls_are_counted_too() -> None:
    store = CountingObjectStore(MemoryObjectStore(before=fail_on("get", times=1)))
    with pytest.raises(StorageUnavailable):
        store.get("k")
    with pytest.raises(PreconditionFailed):
        store.put("k", b"x", if_match="stale")
    assert store.calls("get") == 1
    assert store.calls("conditional_put") == 1


def test_reset_starts_again_from_zero() -> None:
    store = CountingObjectStore(MemoryObjectStore())
    store.put("k", b"x")
    store.reset()
    assert store.total().calls == 0
