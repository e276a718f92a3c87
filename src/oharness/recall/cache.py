"""A derived, machine-local cache of the recall index (spec 03.3), so a new process is ready fast.

Tokenising every note is the whole cost of a cold start; the cache keeps the notes' keys and
lengths and their postings in term order as the index keeps them
(:mod:`~oharness.recall.postings`), which a load adopts as they are. A stale entry is never
used: the file records :data:`CACHE_FORMAT` and the tokeniser's signature (a mismatch
discards it), and every note its *cache key* (e.g. ``(mtime_ns, size, inode)`` of its file);
a note whose current key differs is reported back for the caller to index from the note.

The file starts with a tag and the CRC-32 of the rest; a file whose CRC does not match, or
whose arrays disagree, is discarded: a missing or corrupt cache only costs time (it is never
synced). Writes are atomic (:func:`~oharness.fsio.atomic_write`); the temp files of killed
writers older than :data:`~oharness.notes.tempfiles.STALE_TEMP_AGE_MS` are removed by the next
write.
"""

from __future__ import annotations

import marshal
import mmap
import os
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Final, TypeVar, cast

import numpy as np
import numpy.typing as npt

from oharness.errors import StorageError
from oharness.recall.index import RecallIndex
from oharness.recall.postings import (
    FIELD_COUNT,
    CacheKey,
    CountArray,
    IntArray,
    NoteKey,
    Notes,
    TermOrder,
)
from oharness.recall.vocabulary import Vocabulary
from oharness.types import Scope

#: Bump when the file layout or the indexed form of a note changes (tokeniser changes are
#: covered by its own signature).
CACHE_FORMAT: Final = 8
_MAGIC: Final = "oharness-recall-cache"
_TAG: Final = b"ohrc"  # then the CRC-32 of the rest, little-endian
_SCOPES: Final[tuple[Scope, Scope]] = ("project", "user")
_Number = TypeVar("_Number", bound=np.generic)


def write_cache(path: str | os.PathLike[str], index: RecallIndex) -> int:
    """Write every note of ``index`` that has a cache key to ``path``; returns how many.

    The shared crash-safe write helper is imported here: a process that only reads the cache
    never loads it, nor the hashing it brings."""
    from oharness.fsio import atomic_write
    from oharness.notes.tempfiles import remove_dead_writes

    vocabulary, notes, order = index.term_order()
    valid = np.array([key is not None for key in notes.cache_keys], dtype=np.bool_)
    notes, order = _kept(notes, order, valid)
    used = np.flatnonzero(order.held > 0)
    if len(used) < len(vocabulary):  # terms no cached note holds are left out
        vocabulary = Vocabulary.of([vocabulary[term_id] for term_id in used.tolist()])
        order = order._replace(held=order.held[used])
    blob, offsets = vocabulary.blob()
    hashes, hash_ids = vocabulary.hashes()
    payload = {
        "magic": _MAGIC,
        "format": CACHE_FORMAT,
        "tokenizer": index.tokenizer.signature,
        "terms": bytes(blob),
        "offsets": offsets.astype("<i8").tobytes(),
        "hashes": hashes.astype("<u8").tobytes(),
        "hash_ids": hash_ids.astype("<i4").tobytes(),
        "scopes": bytes(_SCOPES.index(scope) for scope, _ in notes.keys),
        "ids": [note_id for _, note_id in notes.keys],
        "keys": notes.cache_keys,
        "lengths": notes.lengths.astype("<i4").tobytes(),
        "held": order.held.astype("<i4").tobytes(),
        "slots_by_term": order.slots.astype("<i4").tobytes(),
        "frequencies_by_term": order.counts.astype("<u2").tobytes(),
    }
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"could not create the recall cache folder {target.parent}: {exc.strerror or exc}",
            path=str(target),
        ) from exc
    # Before the write, not after: a writer killed every time (a caller's timeout shorter
    # than a first build) still clears the dead writes of earlier attempts.
    remove_dead_writes(target)
    atomic_write(target, framed(payload))
    return len(notes.keys)


def read_cache(
    path: str | os.PathLike[str], index: RecallIndex, keys: Mapping[NoteKey, CacheKey]
) -> set[NoteKey]:
    """Restore into ``index`` each cached note whose key equals ``keys[note]``.

    Returns the notes of ``keys`` that were not restored (absent, stale or unreadable): index
    those with :meth:`RecallIndex.add` and write the cache again. ``index`` must be empty.
    """
    try:
        file = Path(path).open("rb")  # noqa: SIM115 - the with below closes it
    except OSError:
        return set(keys)  # unreadable: rebuild rather than fail
    with file:
        payload = _load(file)
        if payload is None or payload.get("tokenizer") != index.tokenizer.signature:
            return set(keys)
        parts = _parts(payload)
        if parts is None:
            return set(keys)
        terms, notes, order = parts
        fresh = {
            key
            for key, cache_key in zip(notes.keys, notes.cache_keys, strict=True)
            if keys.get(key) == cache_key
        }
        stale = [key for key in notes.keys if key not in fresh]
        mapped = payload["terms"].obj  # the file's map, or its bytes read into memory
        read: _FileRead | None = None
        if isinstance(mapped, mmap.mmap) and hasattr(os, "pread"):  # not on Windows
            at = payload["at"]  # a descriptor of its own: ``file`` is closed below
            read = _FileRead(os.dup(file.fileno()), at["slots_by_term"], at["frequencies_by_term"])
        index.restore(terms, notes, order, read, stale)
        if isinstance(mapped, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
            # the pages the load read, read again from the file cache when a term needs them
            mapped.madvise(mmap.MADV_DONTNEED)
    return set(keys) - fresh


def _kept(notes: Notes, order: TermOrder, valid: npt.NDArray[np.bool_]) -> tuple[Notes, TermOrder]:
    """The notes marked ``valid`` and their postings, their slots renumbered."""
    if valid.all():
        return notes, order
    rows = np.flatnonzero(valid).tolist()
    notes = Notes(
        [notes.keys[row] for row in rows],
        [notes.cache_keys[row] for row in rows],
        notes.lengths[valid],
    )
    ids = np.repeat(np.arange(len(order.held), dtype=np.int32), order.held)
    kept = valid[order.slots]
    renumber = (np.cumsum(valid) - 1).astype(np.int32)
    held = np.bincount(ids[kept], minlength=len(order.held)).astype(np.int32)
    return notes, TermOrder(held, renumber[order.slots[kept]], order.counts[kept])


def framed(payload: dict[str, Any]) -> bytes:
    """The file's bytes for ``payload``: the tag, the CRC-32 of the rest, the size of the
    header, the header (marshalled: every value but the arrays - the bytes values - and each
    array's size), and the arrays one after the other; the header and each array padded to a
    multiple of 8 bytes, so that every array of a mapped file is aligned."""
    blobs = [(name, value) for name, value in payload.items() if isinstance(value, bytes)]
    header = {name: value for name, value in payload.items() if not isinstance(value, bytes)}
    header["blobs"] = [(name, len(blob)) for name, blob in blobs]
    parts = [marshal.dumps(header), *(blob for _, blob in blobs)]
    padded = [part + bytes(-len(part) % 8) for part in parts]
    body = b"".join([len(padded[0]).to_bytes(8, "little"), *padded])
    return _TAG + zlib.crc32(body).to_bytes(4, "little") + body


def _load(file: BinaryIO) -> dict[str, Any] | None:
    """The payload of the file, its arrays views of it and where each starts in the file
    (``at``); None for another file, or this one cut short or damaged.

    The file is memory-mapped: its pages stay the system's file cache, shared and reclaimable,
    and :func:`read_cache` hands them back once the index is made; then only the terms' table
    is read through the map, a term's postings from the file (:class:`_FileRead`). It is read
    into memory on Windows (a mapped file cannot be replaced there) and when empty."""
    try:
        if os.name == "nt" or not os.fstat(file.fileno()).st_size:
            data = memoryview(file.read())
        else:
            data = memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return None  # unreadable: rebuild rather than fail
    crc_at, head_at = len(_TAG), len(_TAG) + 4
    if len(data) < head_at + 8 or data[:crc_at].tobytes() != _TAG:
        return None
    if zlib.crc32(data[head_at:]).to_bytes(4, "little") != data[crc_at:head_at]:
        return None
    position = head_at + 8 + int.from_bytes(data[head_at : head_at + 8], "little")
    try:
        payload = marshal.loads(data[head_at + 8 : position])
        blobs = payload.pop("blobs")
        payload["at"] = {}
        for name, count in blobs:
            payload[name] = data[position : position + count]
            payload["at"][name] = position
            position += count + -count % 8
    except (EOFError, ValueError, TypeError, KeyError, AttributeError):
        return None  # truncated or foreign
    if position != len(data) or payload.get("magic") != _MAGIC:
        return None
    return cast(dict[str, Any], payload) if payload.get("format") == CACHE_FORMAT else None


class _FileRead:
    """A term's postings read from the cache file when asked (``os.pread``), rather than
    through the map: the bytes are the process's only while the term is scored, where pages
    read through a map stay resident (the kernel maps the pages around each one read too)."""

    def __init__(self, fd: int, slots_at: int, counts_at: int) -> None:
        self._fd, self._slots_at, self._counts_at = fd, slots_at, counts_at

    def __call__(self, start: int, end: int) -> tuple[IntArray, CountArray]:
        size = end - start
        slots = os.pread(self._fd, 4 * size, self._slots_at + 4 * start)
        counts = os.pread(
            self._fd, 2 * FIELD_COUNT * size, self._counts_at + 2 * FIELD_COUNT * start
        )
        if len(slots) != 4 * size or len(counts) != 2 * FIELD_COUNT * size:
            raise StorageError(
                "the recall cache file was cut short while in use (written over in place): "
                "restart the process to index the notes again"
            )
        slots_read = np.frombuffer(slots, dtype="<i4").astype(np.int32, copy=False)
        counts_read = np.frombuffer(counts, dtype="<u2").astype(np.uint16, copy=False)
        return slots_read, counts_read.reshape(-1, FIELD_COUNT)

    def __del__(self, close: Callable[[int], None] = os.close) -> None:
        close(self._fd)  # bound here: at exit the module's globals may be gone first


def _parts(payload: dict[str, Any]) -> tuple[Vocabulary, Notes, TermOrder] | None:
    """The payload's terms, notes and postings; None unless they agree: every array sized as
    the others say, the terms' offsets ascending within their blob, their hashes sorted and the
    hashes' ids naming each term once, no note twice nor of a negative length, as many
    postings as the terms say, every slot a note's and each term's slots ascending."""
    ids, cache_keys = payload.get("ids"), payload.get("keys")
    names = ("terms", "offsets", "hashes", "hash_ids", "scopes", "lengths", "held")
    blobs = {name: payload.get(name) for name in (*names, "slots_by_term", "frequencies_by_term")}
    if not (isinstance(ids, list) and isinstance(cache_keys, list)):
        return None
    if not all(isinstance(blob, memoryview) for blob in blobs.values()):
        return None
    stored = cast(dict[str, memoryview], blobs)
    terms = len(stored["offsets"]) // 8 - 1
    notes = len(ids)
    total = len(stored["slots_by_term"]) // 4  # postings
    sizes = {
        "offsets": 8 * (terms + 1),
        "hashes": 8 * terms,
        "hash_ids": 4 * terms,
        "held": 4 * terms,
        "scopes": notes,
        "lengths": 4 * FIELD_COUNT * notes,
        "slots_by_term": 4 * total,
        "frequencies_by_term": 2 * FIELD_COUNT * total,
    }
    if (
        terms < 0
        or len(cache_keys) != notes
        or any(len(stored[name]) != size for name, size in sizes.items())
    ):
        return None
    starts = _array(stored["offsets"], np.int64)
    hashes = _array(stored["hashes"], np.uint64)
    term_ids = _array(stored["hash_ids"], np.int32)
    held = _array(stored["held"], np.int32)
    slots = _array(stored["slots_by_term"], np.int32)
    lengths = _array(stored["lengths"], np.int32).reshape(-1, FIELD_COUNT)
    if (
        starts[0] != 0
        or starts[-1] != len(stored["terms"])
        or (starts[1:] < starts[:-1]).any()
        or (hashes[1:] < hashes[:-1]).any()
        or (terms and (term_ids.min() < 0 or term_ids.max() >= terms))
        or (np.bincount(term_ids, minlength=terms) != 1).any()
    ):
        return None
    if (
        not all(isinstance(note_id, str) for note_id in ids)
        or bytes(stored["scopes"]).strip(b"\x00\x01")
        or (notes and lengths.min() < 0)
        or (terms and (held.min() < 0 or int(held.sum()) != total))
        or (total and (int(slots.min()) < 0 or int(slots.max()) >= notes))
    ):
        return None
    ascending = slots[1:] > slots[:-1]
    firsts = np.cumsum(held)[:-1]  # where each term but the first starts
    ascending[firsts[(firsts > 0) & (firsts < total)] - 1] = True  # a new term may start lower
    keys: list[NoteKey] = [
        (_SCOPES[scope], note_id) for scope, note_id in zip(stored["scopes"], ids, strict=True)
    ]
    if not ascending.all() or len(set(keys)) != len(keys):
        return None
    # The terms are copied out of the map: every message looks terms up, and read through the
    # map the table would be as resident (the pages around each one read come too) and die
    # with the file.
    vocabulary = Vocabulary(bytes(stored["terms"]), starts.copy(), (hashes.copy(), term_ids.copy()))
    counts = _array(stored["frequencies_by_term"], np.uint16).reshape(-1, FIELD_COUNT)
    notes_read = Notes(keys, cache_keys, lengths.astype(np.int64))
    return vocabulary, notes_read, TermOrder(held, slots, counts)


def _array(data: memoryview, dtype: type[_Number]) -> npt.NDArray[_Number]:
    """``data`` as an array of ``dtype``, stored little-endian (a view of it where the machine
    is too)."""
    return np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype, copy=False)
