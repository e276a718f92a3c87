"""An object store wrapper that counts operations and bytes by kind, for benchmarks and tests.

What a protocol operation costs on a real store is what it asks of the store: S3 and R2 bill
per request (writes and lists as "class A", reads as "class B") and move bytes. Wrap any
:class:`~oharness.storage.object_store.ObjectStore` in :class:`CountingObjectStore` and every
call is counted under one of :data:`KINDS`, whether it succeeds or raises (a refused
conditional write is still a billed request):

- ``get`` and ``conditional_get`` (``get_if_changed``; a ``304`` moves no bytes) are reads;
- ``put`` (unconditional), ``conditional_put`` (``if_match`` or ``if_none_match``),
  ``delete`` and ``list`` are writes and lists;
- ``ping`` is a health check.

``bytes_in`` counts object bytes read from the store (for ``list``, the UTF-8 length of the
keys returned), ``bytes_out`` object bytes sent to it: payloads, not wire framing. The
interface has no separate ``head``: a conditional get costs the same request and also returns
the bytes when they changed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from oharness.storage.object_store import NotModified, ObjectStore, StoredObject

__all__ = ["KINDS", "READS", "CountingObjectStore", "Kind", "OperationCount"]

Kind = Literal["get", "conditional_get", "put", "conditional_put", "delete", "list", "ping"]
KINDS: Final[tuple[Kind, ...]] = (
    "get",
    "conditional_get",
    "put",
    "conditional_put",
    "delete",
    "list",
    "ping",
)
#: the kinds S3 and R2 bill as reads ("class B")
READS: Final[frozenset[Kind]] = frozenset({"get", "conditional_get"})


@dataclass(frozen=True)
class OperationCount:
    """Calls of one kind and the payload bytes they moved."""

    calls: int = 0
    bytes_in: int = 0
    bytes_out: int = 0

    def plus(self, other: OperationCount) -> OperationCount:
        """The sum of two counts."""
        return OperationCount(
            self.calls + other.calls,
            self.bytes_in + other.bytes_in,
            self.bytes_out + other.bytes_out,
        )


class CountingObjectStore:
    """Delegates to ``inner`` and counts every call by kind (thread-safe)."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self._counts: dict[Kind, OperationCount] = {}

    def __repr__(self) -> str:
        return f"CountingObjectStore({self.inner!r})"

    # -- the counts --------------------------------------------------------------------------

    def counts(self) -> Mapping[Kind, OperationCount]:
        """A copy of the counts so far, every kind present."""
        with self._lock:
            return {kind: self._counts.get(kind, OperationCount()) for kind in KINDS}

    def total(self, kinds: Iterable[Kind] = KINDS) -> OperationCount:
        """The sum over ``kinds`` (every kind by default)."""
        counts = self.counts()
        result = OperationCount()
        for kind in kinds:
            result = result.plus(counts[kind])
        return result

    def calls(self, kind: Kind) -> int:
        """How many calls of ``kind`` were made."""
        return self.counts()[kind].calls

    def reset(self) -> None:
        """Start counting again from zero."""
        with self._lock:
            self._counts.clear()

    def _add(self, kind: Kind, *, bytes_in: int = 0, bytes_out: int = 0) -> None:
        with self._lock:
            current = self._counts.get(kind, OperationCount())
            self._counts[kind] = current.plus(OperationCount(1, bytes_in, bytes_out))

    # -- the interface -----------------------------------------------------------------------

    def get(self, key: str) -> StoredObject | None:
        """The object at ``key`` with its ETag, or ``None`` when absent."""
        try:
            found = self.inner.get(key)
        except BaseException:
            self._add("get")
            raise
        self._add("get", bytes_in=len(found.data) if found is not None else 0)
        return found

    def get_if_changed(self, key: str, etag: str) -> StoredObject | NotModified | None:
        """:data:`NOT_MODIFIED` while ``key`` still has ``etag``, else as :meth:`get`."""
        try:
            found = self.inner.get_if_changed(key, etag)
        except BaseException:
            self._add("conditional_get")
            raise
        size = len(found.data) if isinstance(found, StoredObject) else 0
        self._add("conditional_get", bytes_in=size)
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
        conditional = if_match is not None or if_none_match
        self._add("conditional_put" if conditional else "put", bytes_out=len(data))
        return self.inner.put(key, data, if_match=if_match, if_none_match=if_none_match)

    def delete(self, key: str) -> None:
        """Remove ``key``; absent keys are fine."""
        self._add("delete")
        self.inner.delete(key)

    def list(self, prefix: str) -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        try:
            keys = self.inner.list(prefix)
        except BaseException:
            self._add("list")
            raise
        self._add("list", bytes_in=sum(len(key.encode("utf-8")) for key in keys))
        return keys

    def ping(self) -> None:
        """Raise :class:`StorageUnavailable` when the store cannot be reached."""
        self._add("ping")
        self.inner.ping()
