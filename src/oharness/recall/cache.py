"""A derived, machine-local cache of the recall index (spec 03.3), so a new process is ready fast.

Tokenising and stemming every note is the whole cost of a cold start; the cache keeps each
note's indexed form (term ids and per-field frequencies) so that a new process only reads one
file and regroups postings with numpy.

Validity, so a stale entry is never used:

- the file records :data:`CACHE_FORMAT` and the tokeniser's signature (its version and
  languages); a mismatch discards the whole file;
- every note is stored with the *cache key* the caller gave when indexing it, e.g.
  ``(mtime_ns, size, inode)`` of its file or its content hash; on load an entry is used only
  when the caller's current key for that note is equal. Anything else - a changed, new,
  unreadable or truncated entry - is reported back for the caller to index from the note.

The file is rebuildable and never synced: a missing or corrupt cache only costs time.
Writes are atomic (unique temp file in the same directory, fsync, ``os.replace``, fsync of the
directory), so a crash leaves the old cache or the new one.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from oharness.errors import StorageError
from oharness.fsio import atomic_write
from oharness.recall.index import RecallIndex
from oharness.recall.postings import FIELD_COUNT, CacheKey, NoteEntry, NoteKey

#: Bump when the file layout or the indexed form of a note changes (2: the mark of a note that
#: asks something; 3: the inflection keys of its summary and tags words). Tokeniser changes
#: are covered by its own signature.
CACHE_FORMAT: Final = 3
_MAGIC: Final = "oharness-recall-cache"
_SCOPES: Final = ("project", "user")


def write_cache(path: str | os.PathLike[str], index: RecallIndex) -> int:
    """Write every note of ``index`` that has a cache key to ``path``; returns how many."""
    terms, all_entries = index.entries()
    entries = [entry for entry in all_entries if entry.cache_key is not None]
    counts = np.array([len(entry.term_ids) for entry in entries], dtype="<i4")
    ids = _concatenate([entry.term_ids for entry in entries], np.int32, (0,))
    frequencies = _concatenate(
        [entry.frequencies for entry in entries], np.float32, (0, FIELD_COUNT)
    )
    payload = {
        "magic": _MAGIC,
        "format": CACHE_FORMAT,
        "tokenizer": index.tokenizer.signature,
        "terms": terms,
        "notes": [(e.key[0], e.key[1], e.cache_key, e.lengths) for e in entries],
        "counts": counts.tobytes(),
        "ids": ids.astype("<i4").tobytes(),
        # Term frequencies fit 16 bits: a body of maxNoteBytes has fewer than 65,536 words.
        "frequencies": frequencies.clip(0, 65535).astype("<u2").tobytes(),
        # Postings in term order, so a load regroups them without sorting.
        "order": np.argsort(ids, kind="stable").astype("<i4").tobytes(),
    }
    write_atomically(Path(path), marshal.dumps(payload))
    return len(entries)


def read_cache(
    path: str | os.PathLike[str], index: RecallIndex, keys: Mapping[NoteKey, CacheKey]
) -> set[NoteKey]:
    """Restore into ``index`` each cached note whose key equals ``keys[note]``.

    Returns the notes of ``keys`` that were not restored (absent, stale or unreadable): index
    those with :meth:`RecallIndex.add` and write the cache again.
    """
    missing = set(keys)
    payload = _load(Path(path))
    if payload is None or payload.get("tokenizer") != index.tokenizer.signature:
        return missing
    arrays = _arrays(payload)
    if arrays is None:
        return missing
    terms, notes, counts, ids, frequencies, order = arrays
    valid = np.zeros(len(notes), dtype=np.bool_)
    entries: list[NoteEntry] = []
    offsets = [0, *np.cumsum(counts).tolist()]
    for number, (scope, note_id, cache_key, lengths) in enumerate(notes):
        key: NoteKey = ("project", note_id) if scope == "project" else ("user", note_id)
        if key in missing and keys[key] == cache_key:
            missing.discard(key)
            valid[number] = True
            start, end = offsets[number], offsets[number + 1]
            entries.append(
                NoteEntry(key, cache_key, ids[start:end], frequencies[start:end], lengths)
            )
    if not valid.all():
        kept = np.repeat(valid, counts)
        renumber = np.cumsum(kept, dtype=np.int64) - 1
        order = renumber[order[kept[order]]].astype(np.int32)
        ids, frequencies = ids[kept], frequencies[kept]
    index.restore(terms, entries, order, (ids, frequencies))
    return missing


def write_atomically(path: Path, data: bytes) -> None:
    """Replace the cache file atomically (the shared crash-safe write helper)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"could not create the recall cache folder {path.parent}: {exc.strerror or exc}",
            path=str(path),
        ) from exc
    atomic_write(path, data)


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        payload = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None  # truncated or foreign file: rebuild rather than fail
    if (
        not isinstance(payload, dict)
        or payload.get("magic") != _MAGIC
        or payload.get("format") != CACHE_FORMAT
    ):
        return None
    return payload


_Arrays = tuple[
    list[str],
    list[tuple[str, str, CacheKey, tuple[int, int, int]]],
    npt.NDArray[np.int32],
    npt.NDArray[np.int32],
    npt.NDArray[np.float32],
    npt.NDArray[np.int32],
]


def _arrays(payload: dict[str, Any]) -> _Arrays | None:
    """The payload's parts, checked for consistency; None when anything is off."""
    terms, notes = payload.get("terms"), payload.get("notes")
    raw = [payload.get(name) for name in ("counts", "ids", "frequencies", "order")]
    if not isinstance(terms, list) or not isinstance(notes, list):
        return None
    blobs = [part for part in raw if isinstance(part, bytes)]
    if len(blobs) != len(raw) or not all(_note_row(row) for row in notes):
        return None
    counts_blob, ids_blob, frequencies_blob, order_blob = blobs
    if any(len(blob) % 4 for blob in (counts_blob, ids_blob, order_blob)):
        return None
    counts = np.frombuffer(counts_blob, dtype="<i4").astype(np.int32, copy=False)
    ids = np.frombuffer(ids_blob, dtype="<i4").astype(np.int32, copy=False)
    order = np.frombuffer(order_blob, dtype="<i4").astype(np.int32, copy=False)
    total = len(ids)
    if len(counts) != len(notes) or int(counts.sum()) != total or len(order) != total:
        return None
    if len(frequencies_blob) != total * FIELD_COUNT * 2 or (len(counts) and counts.min() < 0):
        return None
    if total:
        if int(ids.min()) < 0 or int(ids.max()) >= len(terms):
            return None
        if int(order.min()) < 0 or int(order.max()) >= total:
            return None
        if np.bincount(order, minlength=total).max() != 1 or np.any(np.diff(ids[order]) < 0):
            return None
    frequencies = np.frombuffer(frequencies_blob, dtype="<u2").astype(np.float32)
    return terms, notes, counts, ids, frequencies.reshape(-1, FIELD_COUNT), order


def _note_row(row: object) -> bool:
    if not isinstance(row, tuple) or len(row) != 4:
        return False
    scope, note_id, cache_key, lengths = row
    return (
        scope in _SCOPES
        and isinstance(note_id, str)
        and isinstance(cache_key, str | int | tuple)
        and isinstance(lengths, tuple)
        and len(lengths) == FIELD_COUNT
        and all(isinstance(length, int) for length in lengths)
    )


def _concatenate(
    parts: list[npt.NDArray[Any]], dtype: type[np.generic], empty_shape: tuple[int, ...]
) -> npt.NDArray[Any]:
    return np.concatenate(parts) if parts else np.empty(empty_shape, dtype=dtype)
