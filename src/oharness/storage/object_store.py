"""The object store interface every backend implements, and its error types.

Semantics every backend guarantees (checked by ``tests/contract/test_object_store.py``):
- keys are ``/``-separated strings of safe segments; a backend never writes outside its root;
- ``get`` returns the bytes and an opaque ETag, or ``None`` when the key is absent;
- ``get_if_changed(key, etag)`` is the conditional read: :data:`NOT_MODIFIED` when the object
  still has that ETag (S3 answers ``304`` to ``If-None-Match`` and sends no bytes; the file
  backend decides from a ``stat``), else what ``get`` returns. A backend may read the object to
  decide, never answer :data:`NOT_MODIFIED` for changed bytes;
- ``put`` with ``if_match=ETAG`` replaces only if the current ETag equals it, and with
  ``if_none_match=True`` creates only if the key is absent; otherwise it raises
  :class:`PreconditionFailed` and changes nothing (stores answering 404, 409 or 412 to a failed
  condition all map to it, so callers re-read and retry);
- a successful ``put`` returns the new ETag, and a ``get`` right after sees the new bytes;
- ``delete`` of an absent key is not an error;
- ``list`` returns every key under a prefix, sorted, with no duplicates;
- storage failures (network, permissions, timeouts) raise :class:`StorageUnavailable`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from oharness.errors import PreconditionFailed, StorageUnavailable

__all__ = [
    "NOT_MODIFIED",
    "NotModified",
    "ObjectStore",
    "PreconditionFailed",
    "StorageUnavailable",
    "StoredObject",
]


@dataclass(frozen=True)
class StoredObject:
    """An object's bytes and the ETag to use in a following conditional put."""

    data: bytes
    etag: str


class NotModified(enum.Enum):
    """The answer of a conditional read whose object still has the ETag the caller holds."""

    NOT_MODIFIED = "not modified"


NOT_MODIFIED: Final = NotModified.NOT_MODIFIED


@runtime_checkable
class ObjectStore(Protocol):
    """A key-value object store with compare-and-swap on ETags."""

    def get(self, key: str) -> StoredObject | None:
        """The object at ``key`` with its ETag, or ``None`` when absent."""
        ...

    def get_if_changed(self, key: str, etag: str) -> StoredObject | NotModified | None:
        """:data:`NOT_MODIFIED` while ``key`` still has ``etag``, else as :meth:`get`."""
        ...

    def put(
        self,
        key: str,
        data: bytes,
        *,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> str:
        """Write ``data``; conditional when asked; returns the new ETag."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key``; absent keys are fine."""
        ...

    def list(self, prefix: str) -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        ...

    def ping(self) -> None:
        """Raise :class:`StorageUnavailable` when the store cannot be reached."""
        ...
