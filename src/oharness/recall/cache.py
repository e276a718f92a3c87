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

import contextlib
import marshal
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np

from oharness.errors import StorageError
from oharness.recall.index import RecallIndex
from oharness.recall.postings import FIELD_COUNT, CacheKey, NoteEntry, NoteKey

#: Bump when the file layout changes. Tokeniser changes are covered by its own signature.
CACHE_FORMAT: Final = 1
_MAGIC: Final = "oharness-recall-cache"
_SCOPES: Final = ("project", "user")


def write_cache(path: str | os.PathLike[str], index: RecallIndex) -> int:
    """Write every note of ``index`` that has a cache key to ``path``; returns how many."""
    terms, entries = index.entries()
    rows = [
        (
            entry.key[0],
            entry.key[1],
            entry.cache_key,
            entry.term_ids.astype("<i4").tobytes(),
            entry.frequencies.astype("<f4").tobytes(),
            entry.lengths,
        )
        for entry in entries
        if entry.cache_key is not None
    ]
    payload = {
        "magic": _MAGIC,
        "format": CACHE_FORMAT,
        "tokenizer": index.tokenizer.signature,
        "terms": terms,
        "notes": rows,
    }
    write_atomically(Path(path), marshal.dumps(payload))
    return len(rows)


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
    terms = payload.get("terms")
    rows = payload.get("notes")
    if not isinstance(terms, list) or not isinstance(rows, list):
        return missing
    entries: list[NoteEntry] = []
    for row in rows:
        entry = _entry(row, len(terms))
        if entry is not None and entry.key in missing and keys[entry.key] == entry.cache_key:
            entries.append(entry)
            missing.discard(entry.key)
    index.restore(terms, entries)
    return missing


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, ``os.replace``, fsync of the directory."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _fsync_directory(path.parent)
    except OSError as exc:
        raise StorageError(
            f"could not write the recall cache {path}: {exc.strerror or exc}; it is only a "
            "cache - check the folder's permissions and free space",
            path=str(path),
        ) from exc


def _fsync_directory(directory: Path) -> None:
    if os.name == "nt":  # Windows cannot open a directory for fsync; os.replace is durable there
        return
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


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


def _entry(row: object, term_count: int) -> NoteEntry | None:
    """One cached note, or None when the row is malformed in any way."""
    if not isinstance(row, tuple) or len(row) != 6:
        return None
    scope, note_id, cache_key, ids_bytes, frequency_bytes, lengths = row
    if scope not in _SCOPES or not isinstance(note_id, str) or cache_key is None:
        return None
    if not isinstance(ids_bytes, bytes) or not isinstance(frequency_bytes, bytes):
        return None
    if len(ids_bytes) % 4 or len(frequency_bytes) != len(ids_bytes) * FIELD_COUNT:
        return None
    if not (isinstance(lengths, tuple) and len(lengths) == FIELD_COUNT):
        return None
    term_ids = np.frombuffer(ids_bytes, dtype="<i4").astype(np.int32, copy=False)
    if len(term_ids) and (int(term_ids.min()) < 0 or int(term_ids.max()) >= term_count):
        return None
    frequencies = np.frombuffer(frequency_bytes, dtype="<f4").astype(np.float32, copy=False)
    key: NoteKey = ("project", note_id) if scope == "project" else ("user", note_id)
    return NoteEntry(
        key,
        cache_key,
        term_ids,
        frequencies.reshape(-1, FIELD_COUNT),
        (int(lengths[0]), int(lengths[1]), int(lengths[2])),
    )
