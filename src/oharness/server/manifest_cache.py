"""What one server instance remembers of the manifests it read: never the truth, only a way to
ask the store a cheaper question.

Every entry is keyed by scope and tied to the ETag of the bytes it came from. The store is
asked on every request: with a remembered ETag the question is a conditional read
(``get_if_changed``), which S3 answers ``304`` without bytes and the file backend with a
``stat``; anything else (changed, deleted, restored) returns the current bytes or nothing, and
the entry is replaced or dropped. So instances need not agree on anything, and a reset or a
restore of the storage is seen by every instance at its next request.

- :class:`ManifestCache` holds a few parsed manifests (they are large: a parsed 5,000-note
  manifest is a few MB), so commits and deltas of busy scopes skip the parse;
- :class:`HeadCache` holds many manifests' heads (version, generation, commit: about 200 bytes
  each), which is all an idle check needs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from oharness.sync.protocol import Manifest, ManifestHead

__all__ = ["CachedHead", "HeadCache", "ManifestCache"]

_V = TypeVar("_V")


class _Lru(Generic[_V]):
    """A thread-safe map of at most ``capacity`` entries, least recently used dropped first."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, _V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> _V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: str, value: _V) -> None:
        if self._capacity <= 0:
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def drop(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)


class ManifestCache:
    """Parsed manifests by scope, each with the ETag of the bytes it was parsed from."""

    def __init__(self, capacity: int) -> None:
        self._entries: _Lru[tuple[str, Manifest]] = _Lru(capacity)

    def get(self, prefix: str, etag: str) -> Manifest | None:
        """The manifest cached for ``prefix`` if it has this ETag."""
        entry = self._entries.get(prefix)
        return entry[1] if entry is not None and entry[0] == etag else None

    def latest(self, prefix: str) -> tuple[str, Manifest] | None:
        """The ETag and manifest last cached for ``prefix``, to ask the store whether it holds."""
        return self._entries.get(prefix)

    def put(self, prefix: str, etag: str, manifest: Manifest) -> None:
        """Remember ``manifest`` as the one with ``etag``."""
        self._entries.put(prefix, (etag, manifest))


@dataclass(frozen=True)
class CachedHead:
    """A manifest's head and the ETag of the bytes it was read from."""

    etag: str
    head: ManifestHead


class HeadCache:
    """Manifest heads by scope."""

    def __init__(self, capacity: int) -> None:
        self._entries: _Lru[CachedHead] = _Lru(capacity)

    def get(self, prefix: str) -> CachedHead | None:
        """The head last seen for ``prefix``."""
        return self._entries.get(prefix)

    def put(self, prefix: str, etag: str, head: ManifestHead | None) -> None:
        """Remember ``head`` as that of the bytes with ``etag`` (``None``: forget the scope)."""
        if head is None:
            self._entries.drop(prefix)
        else:
            self._entries.put(prefix, CachedHead(etag, head))

    def drop(self, prefix: str) -> None:
        """Forget the scope (its manifest is gone)."""
        self._entries.drop(prefix)
