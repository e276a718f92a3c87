"""A derived, machine-local cache of the recall index (spec 03.3), so a new process is ready fast.

Tokenising and stemming every note is the whole cost of a cold start; the cache keeps each
note's indexed form (term ids and per-field frequencies) so that a new process only reads one
file. The notes are stored as columns - their keys, and their postings as flat arrays with
the order that sorts them by term - which a load adopts as they are
(:mod:`~oharness.recall.layout`): no Python object per note or per term is made until used.

Validity, so a stale entry is never used:

- the file records :data:`CACHE_FORMAT` and the tokeniser's signature (its version and
  languages); a mismatch discards the whole file;
- every note is stored with the *cache key* the caller gave when indexing it, e.g.
  ``(mtime_ns, size, inode)`` of its file or its content hash; on load an entry is used only
  when the caller's current key for that note is equal. Anything else - a changed, new,
  unreadable or truncated entry - is reported back for the caller to index from the note.

The file starts with a tag and the CRC-32 of the rest; a file whose CRC does not match (cut
short, overwritten, a bit flipped) is discarded, and so is one whose arrays disagree (every
term id must name a term, the order must be a permutation sorting them by term). The file is
rebuildable and never synced: a missing or corrupt cache only costs time.
Writes are atomic (unique temp file in the same directory, fsync, ``os.replace``, fsync of the
directory), so a crash leaves the old cache or the new one. A writer killed before the rename
leaves its temp file (the size of the cache); the next write removes those of this cache file
older than :data:`~oharness.notes.tempfiles.STALE_TEMP_AGE_MS` (younger ones may be another
process's write in progress).
"""

from __future__ import annotations

import marshal
import os
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from oharness.errors import StorageError
from oharness.fsio import atomic_write
from oharness.recall.index import RecallIndex
from oharness.recall.postings import (
    FIELD_COUNT,
    CacheKey,
    Columns,
    FreqArray,
    IntArray,
    NoteKey,
    TermOrder,
)

#: Bump when the file layout or the indexed form of a note changes (2: the mark of a note that
#: asks something; 3: notes as columns, postings read as flat arrays; 4: the inflection keys
#: of its summary and tags words; 5: the postings in term order too, instead of the order
#: that sorts them; 6: a body indexed up to ``INDEXED_BODY_CHARS``). Tokeniser changes are
#: covered by its own signature.
CACHE_FORMAT: Final = 6
_MAGIC: Final = "oharness-recall-cache"
_TAG: Final = b"ohrc"  # then the CRC-32 of the rest, little-endian
_SCOPES: Final = ("project", "user")


def write_cache(path: str | os.PathLike[str], index: RecallIndex) -> int:
    """Write every note of ``index`` that has a cache key to ``path``; returns how many."""
    terms, all_entries = index.entries()
    entries = [entry for entry in all_entries if entry.cache_key is not None]
    columns = Columns.of(entries)
    # Term frequencies fit 16 bits: a body of maxNoteBytes has fewer than 65,536 words.
    stored = columns.frequencies.clip(0, 65535).astype("<u2")
    order = np.argsort(columns.ids, kind="stable")
    owner = np.repeat(np.arange(len(entries), dtype=np.int32), columns.counts)
    payload = {
        "magic": _MAGIC,
        "format": CACHE_FORMAT,
        "tokenizer": index.tokenizer.signature,
        "terms": terms,
        "scopes": bytes(_SCOPES.index(entry.key[0]) for entry in entries),
        "ids": [entry.key[1] for entry in entries],
        "keys": [entry.cache_key for entry in entries],
        "lengths": columns.lengths.astype("<i4").tobytes(),
        "counts": columns.counts.astype("<i4").tobytes(),
        "terms_of": columns.ids.astype("<i4").tobytes(),
        "frequencies": stored.tobytes(),
        # The postings in term order too, so a load adopts both orders as they are.
        "slots_by_term": owner[order].astype("<i4").tobytes(),
        "frequencies_by_term": stored.take(order, axis=0).tobytes(),
    }
    write_atomically(Path(path), framed(marshal.dumps(payload)))
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
    parts = _columns(payload)
    if parts is None:
        return missing
    terms, columns = parts
    valid = np.zeros(len(columns.keys), dtype=np.bool_)
    for number, (key, cache_key) in enumerate(zip(columns.keys, columns.cache_keys, strict=True)):
        if key in missing and keys[key] == cache_key:
            missing.discard(key)
            valid[number] = True
    if not valid.all():
        columns = _kept(columns, valid)
    index.restore_columns(terms, columns)
    return missing


def _kept(columns: Columns, valid: npt.NDArray[np.bool_]) -> Columns:
    """The rows of ``columns`` marked ``valid``, their postings in term order renumbered."""
    kept = np.repeat(valid, columns.counts)
    rows = np.flatnonzero(valid).tolist()
    by_term = columns.by_term
    assert by_term is not None
    ids = columns.ids[kept]
    in_kept = valid[by_term.slots]
    renumber = (np.cumsum(valid) - 1).astype(np.int32)  # the slot each kept row moves to
    return Columns(
        [columns.keys[row] for row in rows],
        [columns.cache_keys[row] for row in rows],
        columns.lengths[valid],
        columns.counts[valid],
        ids,
        columns.frequencies[kept],
        TermOrder(
            np.bincount(ids, minlength=len(by_term.held)).astype(np.int32),
            renumber[by_term.slots[in_kept]],
            by_term.frequencies[in_kept],
        ),
    )


def write_atomically(path: Path, data: bytes) -> None:
    """Replace the cache file atomically (the shared crash-safe write helper)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"could not create the recall cache folder {path.parent}: {exc.strerror or exc}",
            path=str(path),
        ) from exc
    # Before the write, not after: a writer killed every time (a caller's timeout shorter
    # than a first build) still clears the dead writes of earlier attempts.
    _remove_dead_writes(path)
    atomic_write(path, data)


def _remove_dead_writes(path: Path) -> None:
    """Delete what killed writers of ``path`` left: its own temp files, old enough to be dead."""
    from glob import escape

    from oharness.notes.tempfiles import remove_stale_temp_files

    try:
        left = list(path.parent.glob(f".{escape(path.name)}.*.tmp"))
    except OSError:  # the folder cannot be listed: the next write tries again
        return
    remove_stale_temp_files(left, time.time_ns() // 1_000_000)


def framed(body: bytes) -> bytes:
    """The file's bytes for a marshalled ``body``: the tag, the body's CRC-32, the body."""
    return _TAG + zlib.crc32(body).to_bytes(4, "little") + body


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    body = memoryview(data)[len(_TAG) + 4 :]
    if data[: len(_TAG)] != _TAG or data[len(_TAG) : len(_TAG) + 4] != _crc(body):
        return None  # another file, or this one cut short or damaged
    try:
        payload = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return None  # truncated or foreign file: rebuild rather than fail
    if (
        not isinstance(payload, dict)
        or payload.get("magic") != _MAGIC
        or payload.get("format") != CACHE_FORMAT
    ):
        return None
    return payload


def _crc(body: memoryview) -> bytes:
    return zlib.crc32(body).to_bytes(4, "little")


_BLOBS: Final = (
    "scopes",
    "lengths",
    "counts",
    "terms_of",
    "frequencies",
    "slots_by_term",
    "frequencies_by_term",
)


def _columns(payload: dict[str, Any]) -> tuple[list[str], Columns] | None:
    """The payload's terms and notes, checked for consistency; None when anything is off."""
    terms, ids, cache_keys = payload.get("terms"), payload.get("ids"), payload.get("keys")
    blobs = [payload.get(name) for name in _BLOBS]
    if not (isinstance(terms, list) and isinstance(ids, list) and isinstance(cache_keys, list)):
        return None
    if not all(isinstance(blob, bytes) for blob in blobs):
        return None
    scopes, lengths, counts, *postings = cast(list[bytes], blobs)
    notes = len(ids)
    if len(scopes) != notes or len(cache_keys) != notes or len(lengths) != notes * 12:
        return None
    if len(counts) != notes * 4 or any(len(blob) % 4 for blob in postings[::2]):
        return None
    if not all(isinstance(note_id, str) for note_id in ids) or scopes.strip(b"\x00\x01"):
        return None
    arrays = _arrays(len(terms), np.frombuffer(counts, dtype="<i4").astype(np.int64), *postings)
    if arrays is None:
        return None
    keys: list[NoteKey] = [
        ("user", note_id) if scope else ("project", note_id)
        for scope, note_id in zip(scopes, ids, strict=True)
    ]
    sizes = np.frombuffer(lengths, dtype="<i4").astype(np.int64).reshape(-1, FIELD_COUNT)
    if notes and sizes.min() < 0:
        return None
    return terms, Columns(keys, cache_keys, sizes, *arrays)


def _arrays(
    term_count: int,
    counts: npt.NDArray[np.int64],
    ids_blob: bytes,
    frequencies_blob: bytes,
    slots_blob: bytes,
    by_term_blob: bytes,
) -> tuple[npt.NDArray[np.int64], IntArray, FreqArray, TermOrder] | None:
    """The postings' arrays: counts per note, term ids and frequencies in note order, and the
    same postings in term order; None unless consistent (every id a term, every slot a note,
    each term's slots ascending, each note holding as many postings both ways)."""
    ids = np.frombuffer(ids_blob, dtype="<i4").astype(np.int32, copy=False)
    slots = np.frombuffer(slots_blob, dtype="<i4").astype(np.int32, copy=False)
    total, notes = len(ids), len(counts)
    size = total * FIELD_COUNT * 2
    if len(slots) != total or len(frequencies_blob) != size or len(by_term_blob) != size:
        return None
    if notes and (counts.min() < 0 or int(counts.sum()) != total):
        return None
    if total and (int(ids.min()) < 0 or int(ids.max()) >= term_count):
        return None
    if total and (int(slots.min()) < 0 or int(slots.max()) >= notes):
        return None
    held = np.bincount(ids, minlength=term_count).astype(np.int32)
    if total and not _ascending_per_term(slots, held):
        return None
    if total and not np.array_equal(np.bincount(slots, minlength=notes), counts):
        return None
    frequencies = np.frombuffer(frequencies_blob, dtype="<u2").astype(np.float32)
    # In term order the 16-bit counts stay as read: a look-up converts the few it reads.
    by_term = np.frombuffer(by_term_blob, dtype="<u2").reshape(-1, FIELD_COUNT)
    return counts, ids, frequencies.reshape(-1, FIELD_COUNT), TermOrder(held, slots, by_term)


def _ascending_per_term(slots: IntArray, held: IntArray) -> bool:
    """Whether the slots of each term (``held`` per term id, term after term) ascend."""
    steps = np.diff(slots)
    firsts = np.cumsum(held)[:-1]  # where each term but the first starts
    steps[firsts[(firsts > 0) & (firsts < len(slots))] - 1] = 1  # a new term may start lower
    return bool((steps > 0).all())
