"""The memory backend's fault hooks, which simulations use to break storage at exact steps."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from oharness.errors import PreconditionFailed, StorageUnavailable
from oharness.storage.in_memory import MemoryObjectStore, Operation, fail_on


def test_hooks_see_every_operation_with_its_key() -> None:
    calls: list[tuple[str, str, str]] = []
    store = MemoryObjectStore(
        before=lambda op, key: calls.append(("before", op, key)),
        after=lambda op, key: calls.append(("after", op, key)),
    )
    store.put("a/b", b"x")
    store.get("a/b")
    store.list("a/")
    store.delete("a/b")
    store.ping()
    operations = [("put", "a/b"), ("get", "a/b"), ("list", "a/"), ("delete", "a/b"), ("ping", "")]
    assert calls == [(moment, op, key) for op, key in operations for moment in ("before", "after")]


def test_a_failing_before_hook_means_nothing_happened() -> None:
    store = MemoryObjectStore()
    store.put("k", b"old")
    store.before = fail_on("put", times=2)
    for _ in range(2):
        with pytest.raises(StorageUnavailable, match="injected"):
            store.put("k", b"new")
    stored = store.get("k")
    assert stored is not None and stored.data == b"old"
    store.put("k", b"new")  # the hook is used up
    stored = store.get("k")
    assert stored is not None and stored.data == b"new"


def test_a_failing_after_hook_is_a_lost_response() -> None:
    store = MemoryObjectStore(after=fail_on("delete"))
    store.put("k", b"x")
    with pytest.raises(StorageUnavailable):
        store.delete("k")
    assert store.get("k") is None


def test_fail_on_matches_the_operation_and_the_key_suffix() -> None:
    store = MemoryObjectStore(before=fail_on("put", key_endswith="/manifest.json"))
    store.put("scope/objects/n/r.md", b"body")
    store.put("scope/manifest.json.bak", b"not the manifest")
    assert store.get("scope/manifest.json") is None
    with pytest.raises(StorageUnavailable, match=r"put scope/manifest\.json"):
        store.put("scope/manifest.json", b"m")


@pytest.mark.parametrize("op", ["get", "list", "ping", "delete"])
def test_any_operation_can_be_made_to_fail(op: Operation) -> None:
    store = MemoryObjectStore(before=fail_on(op))
    calls: dict[str, Callable[[], object]] = {
        "get": lambda: store.get("k"),
        "list": lambda: store.list(""),
        "ping": store.ping,
        "delete": lambda: store.delete("k"),
    }
    with pytest.raises(StorageUnavailable):
        calls[op]()
    calls[op]()


def test_a_hook_may_use_the_store_to_simulate_a_concurrent_writer() -> None:
    store = MemoryObjectStore()
    etag = store.put("manifest.json", b"v1")
    interfered = False

    def rival(op: str, key: str) -> None:
        nonlocal interfered
        if op == "put" and not interfered:
            interfered = True
            store.put(key, b"rival's v2", if_match=etag)

    store.before = rival
    with pytest.raises(PreconditionFailed):
        store.put("manifest.json", b"our v2", if_match=etag)
    stored = store.get("manifest.json")
    assert stored is not None and stored.data == b"rival's v2"


def test_stored_bytes_are_a_copy() -> None:
    store = MemoryObjectStore()
    data = bytearray(b"mutable")
    store.put("k", data)  # type: ignore[arg-type]
    data[:] = b"changed"
    stored = store.get("k")
    assert stored is not None and stored.data == b"mutable"
