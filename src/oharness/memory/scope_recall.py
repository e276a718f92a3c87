"""Recall over the notes of both scopes: the index kept in step with the stores (spec 03).

:class:`MemoryRecall` owns one :class:`~oharness.recall.index.RecallIndex` for a project and
the user scope. Before every query it asks each store for a cheap refresh and re-indexes only
the notes whose files changed, so an edit shows in the next recall without a rebuild. A new
process starts from the derived cache in ``$OHARNESS_HOME/cache/`` (validated per note by the
file's mtime, size and inode; never synced) and tokenises only what changed. Starting from
the cache reads no note file at all (the stores' stamps are compared with the cache's keys):
a note's file is read when that note is first needed, so a process that attaches two notes
out of a thousand parses two.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oharness.errors import OHarnessError
from oharness.memory.conflict_marks import WAITING, waiting_conflicts
from oharness.memory.usage import UsageLog
from oharness.notes.secrets import MODEL_MARKER, redact_secrets
from oharness.notes.store import NoteStore, StoredNote
from oharness.settings import RecallSettings
from oharness.types import SCOPES, Clock, Scope

if TYPE_CHECKING:  # numpy and the stemmers load only when a command actually recalls
    from oharness.recall.index import Hit, RecallIndex

log = logging.getLogger(__name__)
NoteKey = tuple[Scope, str]
CacheKey = tuple[int, int, int]

#: Rewrite the cache at start-up when more than this share of notes had to be tokenised.
_CACHE_REWRITE_SHARE = 0.02
_CACHE_REWRITE_MIN = 20
SNIPPET_CHARS = 160


@dataclass(frozen=True)
class SearchHit:
    """One ``memory(query)`` result."""

    id: str
    scope: Scope
    summary: str
    score: float
    snippet: str
    #: A sync conflict waits for this note.
    conflict: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "summary": self.summary,
            "score": round(self.score, 3),
            "snippet": self.snippet,
            **({"conflict": WAITING} if self.conflict else {}),
        }


def _cache_key(stored: StoredNote) -> CacheKey:
    stamp = stored.stamp  # a named tuple equal to this key, but marshal writes plain ones
    return (stamp.mtime_ns, stamp.size, stamp.inode)


def snippet(body: str, query: str, limit: int = SNIPPET_CHARS) -> str:
    """The first body line sharing a word with the query (else the first line), shortened."""
    words = {word.casefold() for word in query.split() if len(word) >= 3}
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    chosen = next(
        (line for line in lines if any(word in line.casefold() for word in words)),
        lines[0] if lines else "",
    )
    # Redacted before it is shortened: a cut through a credential would hide it from the scan.
    chosen = redact_secrets(chosen, MODEL_MARKER)
    return chosen if len(chosen) <= limit else chosen[: limit - 1].rstrip() + "…"


class MemoryRecall:
    """The recall index of one project (or none) and the user scope."""

    def __init__(
        self,
        stores: Mapping[Scope, NoteStore],
        settings: RecallSettings,
        *,
        scope_keys: Mapping[Scope, str],
        clock: Clock,
        cache_dir: Path | None = None,
        usage: UsageLog | None = None,
        conflict_dirs: Mapping[Scope, Path] | None = None,
    ) -> None:
        self._stores = dict(stores)
        self._conflict_dirs = dict(conflict_dirs or {})
        self.settings = settings
        self._scope_keys = dict(scope_keys)
        self._clock = clock
        self._cache_dir = cache_dir
        self._usage = usage
        self._index: RecallIndex | None = None
        self._generations: dict[Scope, int] = {}
        #: Every indexed note; ``None`` while its file is not read (indexed from the cache).
        self._indexed: dict[NoteKey, StoredNote | None] = {}
        self._unsaved = 0
        self._lock = threading.RLock()

    def waiting_conflicts(self) -> frozenset[NoteKey]:
        """The notes with a sync conflict waiting (marked in the recall block)."""
        return waiting_conflicts(self._conflict_dirs)

    # ---- keeping the index in step ---------------------------------------------------------

    @property
    def cache_path(self) -> Path | None:
        """Where the derived index cache of this set of folders lives."""
        if self._cache_dir is None:
            return None
        folders = "\n".join(
            f"{scope}={os.path.realpath(store.directory)}" for scope, store in self._stores.items()
        )
        digest = hashlib.sha256(folders.encode("utf-8")).hexdigest()[:24]
        return self._cache_dir / f"recall-{digest}.marshal"

    def index(self) -> RecallIndex:
        """The index, brought up to date with the notes on disk."""
        with self._lock:
            if self._index is None:
                self._index = self._build()
            else:
                self._sync(self._index)
            return self._index

    def _stamps(self) -> dict[NoteKey, CacheKey]:
        """The cache key of every note of both scopes, from the stores' stamps (no file read)."""
        keys: dict[NoteKey, CacheKey] = {}
        for scope in SCOPES:
            store = self._stores.get(scope)
            if store is None:
                continue
            # A stamp is the tuple ``(mtime_ns, size, inode)``: the cache key as it is.
            keys.update({(scope, note_id): stamp for note_id, stamp in store.stamps().items()})
            self._generations[scope] = store.generation
        return keys

    def _build(self) -> RecallIndex:
        from oharness.recall.cache import read_cache
        from oharness.recall.index import RecallIndex

        index = RecallIndex.from_settings(self.settings)
        keys = self._stamps()
        path = self.cache_path
        missing = set(keys)
        if path is not None:
            try:
                missing = read_cache(path, index, keys)
            except (OSError, ValueError) as exc:  # a broken cache only costs time
                log.warning("recall cache %s unreadable, rebuilding: %s", path, exc)
                index = RecallIndex.from_settings(self.settings)
        self._indexed = dict.fromkeys(keys.keys() - missing)
        fresh = [(key, self._stores[key[0]].get_one(key[1])) for key in missing]
        read = [(key, stored) for key, stored in fresh if stored is not None]
        index.add_many(
            [(key[0], stored.note) for key, stored in read],
            {key: _cache_key(stored) for key, stored in read},
        )
        self._indexed.update(read)
        self._unsaved = len(missing)
        self._flush(index, force=False)
        return index

    def _flush(self, index: RecallIndex, *, force: bool) -> None:
        path = self.cache_path
        threshold = max(_CACHE_REWRITE_MIN, int(len(self._indexed) * _CACHE_REWRITE_SHARE))
        if path is not None and self._unsaved and (force or self._unsaved >= threshold):
            self._write_cache(index, path)
            self._unsaved = 0

    def flush_cache(self, *, force: bool = False) -> None:
        """Write the derived cache when enough notes changed since it was read (or ``force``).

        Below the threshold a new process re-tokenises the few changed notes, which costs
        less than rewriting the whole cache after every edit.
        """
        with self._lock:
            if self._index is not None:
                self._flush(self._index, force=force)

    def _write_cache(self, index: RecallIndex, path: Path) -> None:
        from oharness.recall.cache import write_cache

        try:
            write_cache(path, index)
        except OHarnessError as exc:
            log.warning("recall cache not written: %s", exc.message)

    def _sync(self, index: RecallIndex) -> None:
        for scope, store in self._stores.items():
            store.refresh(lazy=True)  # notes indexed from the cache are read when needed
            seen = self._generations.get(scope)
            if store.generation == seen:
                continue
            changes = store.changes_since(seen) if seen is not None else None
            if changes is None:
                self._resync_scope(index, scope, store)
                continue
            for note_id, stored in changes:  # only what this process wrote: no full pass
                self._apply(index, (scope, note_id), stored)
            self._generations[scope] = store.generation

    def _apply(self, index: RecallIndex, key: NoteKey, stored: StoredNote | None) -> None:
        if stored is None:
            if key not in self._indexed:
                return
            del self._indexed[key]
            index.remove(*key)
        elif key in self._indexed and self._indexed[key] is stored:
            return
        elif self._indexed.get(key) is None and index.cache_key(key) == _cache_key(stored):
            self._indexed[key] = stored  # indexed from the cache: this is the same version
            return
        else:
            index.add(key[0], stored.note, cache_key=_cache_key(stored))
            self._indexed[key] = stored
        self._unsaved += 1

    def _resolved(self, key: NoteKey) -> StoredNote | None:
        """The indexed note, its file read now if it was indexed from the cache (``None``:
        not indexed, or its file is gone or unreadable, which drops it from the index)."""
        if key not in self._indexed:
            return None
        stored = self._indexed[key]
        if stored is None and self._index is not None:
            self._apply(self._index, key, self._stores[key[0]].get_one(key[1]))
            stored = self._indexed.get(key)
        return stored

    def _resync_scope(self, index: RecallIndex, scope: Scope, store: NoteStore) -> None:
        current = {(scope, stored.id): stored for stored in store.notes()}
        self._generations[scope] = store.generation
        for key, stored in current.items():
            if self._indexed.get(key) is not stored:
                self._apply(index, key, stored)
        for key in [key for key in self._indexed if key[0] == scope and key not in current]:
            self._apply(index, key, None)

    def stored(self, key: NoteKey) -> StoredNote | None:
        """The indexed version of a note."""
        with self._lock:
            return self._resolved(key)

    # ---- queries ---------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """Ranked matches across both scopes, no threshold (``memory(query)``)."""
        with self._lock:
            hits = self.index().search(query, limit)
            return self._search_hits(hits, query)

    def _search_hits(self, hits: list[Hit], query: str) -> list[SearchHit]:
        found = [(hit, self._resolved(hit.key)) for hit in hits]
        return [
            SearchHit(
                hit.id, hit.scope, stored.note.summary, hit.score, snippet(stored.note.body, query)
            )
            for hit, stored in found
            if stored is not None
        ]

    def related(self, stored: StoredNote, limit: int = 5) -> list[SearchHit]:
        """The notes on the same topic as ``stored`` (itself excluded; often none)."""
        with self._lock:
            hits = self.index().related(stored.note, limit, scope=stored.scope)
            return self._search_hits(hits, "")

    def likely_duplicate(self, stored: StoredNote, candidates: int = 20) -> StoredNote | None:
        """A note of the same scope on the same topic (summary+tags similarity), if any."""
        with self._lock:
            index = self.index()
            best: tuple[float, StoredNote] | None = None
            for hit in index.related(stored.note, candidates, scope=stored.scope, gated=False):
                other = self._resolved(hit.key)
                if other is None or other.scope != stored.scope:
                    continue
                score = index.similarity(stored.note, other.note)
                if index.likely_duplicate(stored.note, other.note) and (
                    best is None or score > best[0]
                ):
                    best = (score, other)
            return best[1] if best else None

    def recall(
        self, message: str, exclude: Collection[NoteKey | str] = (), *, record: bool = False
    ) -> list[tuple[StoredNote, float]]:
        """The notes to attach to ``message`` (usually none), best first."""
        with self._lock:
            index = self.index()
            usage = self._usage.load(self._scope_keys) if self._usage else None
            hits = index.recall(
                message, exclude=exclude, settings=self.settings, usage=usage, now=self._clock()
            )
            resolved = [(self._resolved(hit.key), hit.score) for hit in hits]
            found = [(stored, score) for stored, score in resolved if stored is not None]
        if record:
            self.record_usage([(stored.scope, stored.id) for stored, _ in found])
        return found

    def record_usage(self, keys: Collection[NoteKey]) -> None:
        """Count one recall of each of these notes on this machine."""
        if self._usage is None:
            return
        for scope in SCOPES:
            ids = [note_id for note_scope, note_id in keys if note_scope == scope]
            if ids and scope in self._scope_keys:
                self._usage.record(self._scope_keys[scope], ids)

    def summary_of(self, target: str) -> tuple[str, Scope] | None:
        """A link target's summary and scope, project first; None when dangling."""
        with self._lock:
            for scope in SCOPES:
                stored = self._resolved((scope, target))
                if stored is not None:
                    return stored.note.summary, scope
        return None
