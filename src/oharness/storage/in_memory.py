"""An in-process object store with fault hooks, for simulations and fast tests.

It keeps the same semantics as the real backends (it passes the conformance suite): keys are
validated the same way, ETags are content hashes like the file backend's (and like S3's MD5
ETags for plain uploads), and a failed condition raises
:class:`~oharness.errors.PreconditionFailed` without changing anything.

Fault hooks let a test break storage at an exact step, e.g. "after the objects were uploaded,
before the manifest is written"::

    store = MemoryObjectStore(before=fail_on("put", key_endswith="/manifest.json"))

``before(op, key)`` runs before an operation takes effect: raising there means nothing happened.
``after(op, key)`` runs once it took effect: raising there is a lost response (the write landed
but the caller sees an error, as after a network timeout). ``op`` is one of ``get``,
``get_if_changed``, ``put``, ``delete``, ``list`` and ``ping``; ``key`` is the key (the prefix
for ``list``, ``""`` for ``ping``). Hooks run outside the store's lock, so a hook may itself use
the store (to simulate a concurrent writer).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Literal

from oharness.errors import PreconditionFailed, StorageUnavailable
from oharness.storage.object_store import NOT_MODIFIED, NotModified, StoredObject
from oharness.storage.validation import validate_condition, validate_key, validate_prefix

__all__ = ["FaultHook", "MemoryObjectStore", "Operation", "fail_on"]

Operation = Literal["get", "get_if_changed", "put", "delete", "list", "ping"]
FaultHook = Callable[[Operation, str], None]


class MemoryObjectStore:
    """A thread-safe dictionary of objects with ETags and optional fault hooks."""

    def __init__(self, *, before: FaultHook | None = None, after: FaultHook | None = None) -> None:
        self.before = before
        self.after = after
        self._objects: dict[str, StoredObject] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryObjectStore({len(self._objects)} objects)"

    def get(self, key: str) -> StoredObject | None:
        """The object at ``key`` with its ETag, or ``None`` when absent."""
        validate_key(key)
        self._hook(self.before, "get", key)
        with self._lock:
            found = self._objects.get(key)
        self._hook(self.after, "get", key)
        return found

    def get_if_changed(self, key: str, etag: str) -> StoredObject | NotModified | None:
        """:data:`NOT_MODIFIED` while ``key`` still has ``etag``, else as :meth:`get`."""
        validate_key(key)
        self._hook(self.before, "get_if_changed", key)
        with self._lock:
            found = self._objects.get(key)
        self._hook(self.after, "get_if_changed", key)
        if found is not None and found.etag == etag:
            return NOT_MODIFIED
        return found

    def put(
        self,
        key: str,
        data: bytes,
        *,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> str:
        """Write ``data``; conditional when asked; returns the new ETag."""
        validate_key(key)
        validate_condition(if_match, if_none_match)
        stored = StoredObject(bytes(data), _content_etag(data))
        self._hook(self.before, "put", key)
        with self._lock:
            current = self._objects.get(key)
            if if_none_match and current is not None:
                raise _precondition_failed(key, "it already exists")
            if if_match is not None and (current is None or current.etag != if_match):
                reason = "it does not exist" if current is None else "it changed"
                raise _precondition_failed(key, reason)
            self._objects[key] = stored
        self._hook(self.after, "put", key)
        return stored.etag

    def delete(self, key: str) -> None:
        """Remove ``key``; absent keys are fine."""
        validate_key(key)
        self._hook(self.before, "delete", key)
        with self._lock:
            self._objects.pop(key, None)
        self._hook(self.after, "delete", key)

    def list(self, prefix: str) -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        validate_prefix(prefix)
        self._hook(self.before, "list", prefix)
        with self._lock:
            keys = sorted(key for key in self._objects if key.startswith(prefix))
        self._hook(self.after, "list", prefix)
        return keys

    def ping(self) -> None:
        """Succeeds unless a fault hook says otherwise."""
        self._hook(self.before, "ping", "")
        self._hook(self.after, "ping", "")

    @staticmethod
    def _hook(hook: FaultHook | None, op: Operation, key: str) -> None:
        if hook is not None:
            hook(op, key)


def fail_on(
    op: Operation,
    *,
    key_endswith: str = "",
    times: int = 1,
    message: str = "injected storage fault",
) -> FaultHook:
    """A hook raising :class:`StorageUnavailable` on the first ``times`` matching calls."""
    remaining = times
    lock = threading.Lock()

    def hook(called_op: Operation, key: str) -> None:
        nonlocal remaining
        if called_op != op or not key.endswith(key_endswith):
            return
        with lock:
            if remaining <= 0:
                return
            remaining -= 1
        raise StorageUnavailable(f"{message} ({op} {key}); retry later", key=key, op=op)

    return hook


def _content_etag(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _precondition_failed(key: str, reason: str) -> PreconditionFailed:
    return PreconditionFailed(
        f"conditional write to {key} failed: {reason}; re-read it and retry", key=key
    )
