"""The bulk layout of postings: every note's terms, and every term's notes, as flat arrays.

A first build and a cache load hold most postings in one :class:`Base`: for the notes, one
array of term ids and one of frequencies in note order with an offset per note; for the terms,
the same postings sorted by term id with an offset per term (compressed sparse rows, both
ways). A term's notes or a note's terms are then a slice, made when asked for, and loading
10,000 notes costs a few array operations instead of a Python object per term and per note.
The arrays are never written to: :class:`~oharness.recall.postings.Postings` keeps what
changes after the load beside them (copy on write, per touched term and note).
"""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.types import Scope

NoteKey = tuple[Scope, str]
#: A caller's proof that a note is unchanged, e.g. ``(mtime_ns, size, inode)`` or a hash.
CacheKey = str | int | tuple[int, ...]

IntArray = npt.NDArray[np.int32]
FreqArray = npt.NDArray[np.float32]
OffsetArray = npt.NDArray[np.int64]
FIELD_COUNT: Final = 3  # summary, tags, body
_EMPTY_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
_EMPTY_FREQUENCIES: Final[FreqArray] = np.empty((0, FIELD_COUNT), dtype=np.float32)
#: Up to this many terms, :meth:`Base.gather` slices each term's positions (measured faster).
_FEW_TERMS: Final = 4


class NoteEntry(NamedTuple):
    """A note's indexed form: its term ids and their per-field frequencies.

    A named tuple rather than a dataclass: tuples are several times cheaper to build.
    """

    key: NoteKey
    cache_key: CacheKey | None
    term_ids: IntArray
    frequencies: FreqArray  # shape (len(term_ids), 3)
    lengths: tuple[int, int, int]  # terms per field, for length normalisation


class Columns(NamedTuple):
    """Notes in their indexed form as columns (what the cache stores), slot ``n`` for row ``n``.

    ``ids`` and ``frequencies`` are the notes' postings concatenated in note order (``counts``
    per note); ``order`` lists their positions sorted by term id (stable), or is None to sort.
    """

    keys: list[NoteKey]
    cache_keys: list[CacheKey | None]
    lengths: npt.NDArray[np.int64]  # (notes, 3): terms per field
    counts: npt.NDArray[np.int64]
    ids: IntArray
    frequencies: FreqArray
    order: npt.NDArray[np.integer] | None = None

    @classmethod
    def of(cls, entries: list[NoteEntry]) -> Columns:
        """The columns of ``entries``."""
        counts = np.fromiter((len(e.term_ids) for e in entries), np.int64, len(entries))
        return cls(
            [entry.key for entry in entries],
            [entry.cache_key for entry in entries],
            np.array([entry.lengths for entry in entries], dtype=np.int64).reshape(-1, 3),
            counts,
            np.concatenate([_EMPTY_SLOTS, *(entry.term_ids for entry in entries)]),
            np.concatenate([_EMPTY_FREQUENCIES, *(entry.frequencies for entry in entries)]),
        )

    def entries(self) -> list[NoteEntry]:
        """One entry per row."""
        ends = np.cumsum(self.counts).tolist()
        starts = [0, *ends][: len(ends)]
        sizes: list[tuple[int, int, int]] = [(a, b, c) for a, b, c in self.lengths.tolist()]
        return [
            NoteEntry(key, cache_key, self.ids[start:end], self.frequencies[start:end], size)
            for key, cache_key, start, end, size in zip(
                self.keys, self.cache_keys, starts, ends, sizes, strict=True
            )
        ]


class Base:
    """The postings of notes loaded or built together, both ways; see the module docstring.

    Rows are slots ``0 .. notes - 1``; ``term_count`` is the size of the vocabulary then.
    """

    def __init__(self, columns: Columns, term_count: int) -> None:
        counts = columns.counts
        self.note_count = len(counts)
        self.term_count = term_count
        self.note_starts: OffsetArray = np.zeros(self.note_count + 1, dtype=np.int64)
        np.cumsum(counts, out=self.note_starts[1:])
        self.ids = columns.ids
        self.frequencies = columns.frequencies
        self.lengths = columns.lengths
        #: The slot of each posting, in note order.
        self.owner: IntArray = np.repeat(np.arange(self.note_count, dtype=np.int32), counts)
        order = columns.order
        if order is None:
            order = np.argsort(self.ids, kind="stable")
        #: The positions of the postings sorted by term id (stable: each term's slots ascend).
        self.order = order
        #: Notes per term id: how many postings each term has.
        self.held: IntArray = np.bincount(self.ids, minlength=term_count).astype(np.int32)
        self.term_starts: OffsetArray = np.zeros(term_count + 1, dtype=np.int64)
        np.cumsum(self.held, out=self.term_starts[1:])
        #: Whether every term of the vocabulary then has a posting here.
        self.gapless = bool(self.held.all())

    def term(self, term_id: int) -> tuple[IntArray, FreqArray]:
        """The slots holding a term (ascending) and its frequencies there, gathered when asked
        for (a load never copies every posting into term order)."""
        if term_id >= self.term_count:
            return _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        starts = self.term_starts
        positions = self.order[starts.item(term_id) : starts.item(term_id + 1)]
        return self.owner[positions], self.frequencies.take(positions, axis=0)

    def gather(self, term_ids: list[int]) -> tuple[list[int], IntArray, FreqArray]:
        """The postings of several terms (ids below ``term_count``) together, in their order:
        where each term's start (and the end: one offset more than terms), the slots and the
        frequencies. One gather for all of them: a few array operations, not a few per term.
        """
        bounds, positions = self._positions(term_ids)
        # ``take`` rather than indexing: several times faster for rows of a 2-D array.
        return bounds, self.owner[positions], self.frequencies.take(positions, axis=0)

    def gather_slots(self, term_ids: list[int]) -> tuple[list[int], IntArray]:
        """:meth:`gather` without the frequencies."""
        bounds, positions = self._positions(term_ids)
        return bounds, self.owner[positions]

    def _positions(self, term_ids: list[int]) -> tuple[list[int], npt.NDArray[np.integer]]:
        """Where each term's postings start in the concatenation (and its end), and their
        positions in the note-order arrays."""
        starts = self.term_starts
        if len(term_ids) <= _FEW_TERMS:  # a slice per term is cheaper than arranging them
            order = self.order
            bounds = [0]
            pieces = []
            for term_id in term_ids:
                first, last = starts.item(term_id), starts.item(term_id + 1)
                pieces.append(order[first:last])
                bounds.append(bounds[-1] + last - first)
            if len(pieces) == 1:
                return bounds, pieces[0]
            return bounds, np.concatenate(pieces) if pieces else order[:0]
        ids = np.array(term_ids, dtype=np.intp)
        begin = starts[ids]
        lengths = starts[ids + 1] - begin
        ends = np.cumsum(lengths)
        # Each posting's place in ``order``: its term's start plus its rank in the term.
        shift = np.repeat(begin - (ends - lengths), lengths)
        positions = self.order[np.arange(len(shift), dtype=np.int64) + shift]
        return [0, *ends.tolist()], positions

    def entry(self, slot: int, key: NoteKey, cache_key: CacheKey | None) -> NoteEntry:
        """The entry of the note loaded into ``slot``."""
        start, end = self.note_starts[slot], self.note_starts[slot + 1]
        a, b, c = self.lengths[slot].tolist()
        return NoteEntry(
            key, cache_key, self.ids[start:end], self.frequencies[start:end], (a, b, c)
        )
