"""The bulk layout of postings: every note's terms, and every term's notes, as flat arrays.

A first build and a cache load hold most postings in one :class:`Base`: for the notes, one
array of term ids and one of frequencies in note order with an offset per note; for the terms,
the same postings in term order - the slots holding each term (ascending) and its frequencies
there - with an offset per term (compressed sparse rows, both ways, :class:`TermOrder`). A
note's terms or a term's notes are then slices, and a first look-up of a term reads two runs
of memory rather than one scattered read per posting; loading 10,000 notes costs a few array
operations instead of a Python object per term and per note (the cache stores both orders).
The arrays are never written to: :class:`~oharness.recall.postings.Postings` keeps what
changes after the load beside them (copy on write, per touched term and note).
"""

from __future__ import annotations

from functools import cached_property
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.types import Scope

NoteKey = tuple[Scope, str]
#: A caller's proof that a note is unchanged, e.g. ``(mtime_ns, size, inode)`` or a hash.
CacheKey = str | int | tuple[int, ...]

IntArray = npt.NDArray[np.int32]
FreqArray = npt.NDArray[np.float32]
#: Frequencies as stored: float32, or the cache's 16-bit counts (converted when read).
StoredFreqArray = npt.NDArray[np.float32] | npt.NDArray[np.uint16]
OffsetArray = npt.NDArray[np.int64]
FIELD_COUNT: Final = 3  # summary, tags, body
_EMPTY_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
_EMPTY_FREQUENCIES: Final[FreqArray] = np.empty((0, FIELD_COUNT), dtype=np.float32)
#: Up to this many terms, :meth:`Base.gather` slices each term's run (measured faster).
_FEW_TERMS: Final = 8


class NoteEntry(NamedTuple):
    """A note's indexed form: its term ids and their per-field frequencies.

    A named tuple rather than a dataclass: tuples are several times cheaper to build.
    """

    key: NoteKey
    cache_key: CacheKey | None
    term_ids: IntArray
    frequencies: FreqArray  # shape (len(term_ids), 3)
    lengths: tuple[int, int, int]  # terms per field, for length normalisation


class TermOrder(NamedTuple):
    """The postings of :class:`Columns` in term order: how many each term id has, then each
    term's slots (ascending) and frequencies there, term after term."""

    held: IntArray
    slots: IntArray
    frequencies: StoredFreqArray


class Columns(NamedTuple):
    """Notes in their indexed form as columns (what the cache stores), slot ``n`` for row ``n``.

    ``ids`` and ``frequencies`` are the notes' postings concatenated in note order (``counts``
    per note); ``by_term`` the same postings in term order, or None to sort them.
    """

    keys: list[NoteKey]
    cache_keys: list[CacheKey | None]
    lengths: npt.NDArray[np.int64]  # (notes, 3): terms per field
    counts: npt.NDArray[np.int64]
    ids: IntArray
    frequencies: FreqArray
    by_term: TermOrder | None = None

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

    def term_order(
        self, term_count: int, order: npt.NDArray[np.integer] | None = None
    ) -> TermOrder:
        """The postings in term order (``order``: their positions sorted by term id, stable;
        None to sort them)."""
        if order is None:
            order = np.argsort(self.ids, kind="stable")
        owner = np.repeat(np.arange(len(self.counts), dtype=np.int32), self.counts)
        held = np.bincount(self.ids, minlength=term_count).astype(np.int32)
        # ``take`` rather than indexing: several times faster for rows of a 2-D array.
        return TermOrder(held, owner[order], self.frequencies.take(order, axis=0))


class Found(NamedTuple):
    """The postings of several terms, concatenated (see
    :meth:`~oharness.recall.postings.Postings.lookup_many`).

    ``positions``: which of the terms asked some note holds (their places in the list
    asked, in the order of their postings here); ``bounds``: where each one's postings start,
    and the end. A term's slots and frequencies are slices of ``slots`` and ``frequencies``.
    """

    positions: list[int]
    bounds: list[int]
    slots: IntArray
    frequencies: FreqArray

    @classmethod
    def of(cls, postings: list[tuple[int, tuple[IntArray, FreqArray]]]) -> Found:
        """The concatenation of ``postings`` (position, postings), none empty."""
        if len(postings) == 1:  # no copy
            position, (slots, frequencies) = postings[0]
            return cls([position], [0, len(slots)], slots, frequencies)
        return cls([], [0], _EMPTY_SLOTS, _EMPTY_FREQUENCIES).extended(postings)

    def extended(self, more: list[tuple[int, tuple[IntArray, FreqArray]]]) -> Found:
        """These postings followed by those of ``more`` (position, postings), none empty."""
        if not more:
            return self
        bounds = list(self.bounds)
        for _, (slots, _frequencies) in more:
            bounds.append(bounds[-1] + len(slots))
        return Found(
            [*self.positions, *(position for position, _ in more)],
            bounds,
            np.concatenate([self.slots, *(slots for _, (slots, _f) in more)]),
            np.concatenate([self.frequencies, *(frequencies for _, (_s, frequencies) in more)]),
        )

    def without_empty(self) -> Found:
        """These postings without the terms that have none."""
        bounds = self.bounds
        kept = [n for n in range(len(self.positions)) if bounds[n + 1] > bounds[n]]
        if len(kept) == len(self.positions):
            return self
        return Found(
            [self.positions[n] for n in kept],
            [*(bounds[n] for n in kept), bounds[-1]],
            self.slots,
            self.frequencies,
        )


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
        self._counts = counts
        by_term = columns.by_term
        if by_term is None:
            by_term = columns.term_order(term_count)
        #: Notes per term id: how many postings each term has.
        self.held: IntArray = by_term.held
        self.term_starts: OffsetArray = np.zeros(term_count + 1, dtype=np.int64)
        np.cumsum(self.held, out=self.term_starts[1:])
        #: Each term's slots (ascending) and frequencies, term after term.
        self.term_slots = by_term.slots
        self.term_frequencies = by_term.frequencies
        #: Whether every term of the vocabulary then has a posting here.
        self.gapless = bool(self.held.all())

    @cached_property
    def owner(self) -> npt.NDArray[np.intp]:
        """The slot of each posting, in note order (made when first asked for; read only)."""
        return np.repeat(np.arange(self.note_count, dtype=np.intp), self._counts)

    def term(self, term_id: int) -> tuple[IntArray, FreqArray]:
        """The slots holding a term (ascending) and its frequencies there."""
        if term_id >= self.term_count:
            return _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        start, end = self.term_starts.item(term_id), self.term_starts.item(term_id + 1)
        frequencies = self.term_frequencies[start:end].astype(np.float32, copy=False)
        return self.term_slots[start:end], frequencies

    def gather(self, term_ids: list[int]) -> tuple[list[int], IntArray, FreqArray]:
        """The postings of several terms (ids below ``term_count``) together, in their order:
        where each term's start (and the end: one offset more than terms), the slots and the
        frequencies (a run of each array per term, concatenated)."""
        bounds, runs = self._runs(term_ids)
        if isinstance(runs, list):
            slots = np.concatenate([self.term_slots[a:b] for a, b in runs])
            stored = self.term_frequencies
            frequencies = np.concatenate([stored[a:b] for a, b in runs], dtype=np.float32)
            return bounds, slots, frequencies
        taken = self.term_frequencies.take(runs, axis=0).astype(np.float32, copy=False)
        return bounds, self.term_slots.take(runs), taken

    def _runs(
        self, term_ids: list[int]
    ) -> tuple[list[int], list[tuple[int, int]] | npt.NDArray[np.int64]]:
        """Where each term's postings start in the concatenation (and its end), and where they
        are in the term-order arrays: a (start, end) per term, or for many terms the index of
        each posting (one array operation instead of a slice each)."""
        starts = self.term_starts
        if len(term_ids) <= _FEW_TERMS:
            runs = [(starts.item(term_id), starts.item(term_id + 1)) for term_id in term_ids]
            bounds = [0]
            for start, end in runs:
                bounds.append(bounds[-1] + end - start)
            return bounds, runs if runs else [(0, 0)]
        ids = np.array(term_ids, dtype=np.intp)
        begin = starts[ids]
        lengths = starts[ids + 1] - begin
        ends = np.cumsum(lengths)
        # Each posting's index: its term's start plus its rank in the term.
        shift = np.repeat(begin - (ends - lengths), lengths)
        return [0, *ends.tolist()], np.arange(len(shift), dtype=np.int64) + shift

    def entry(self, slot: int, key: NoteKey, cache_key: CacheKey | None) -> NoteEntry:
        """The entry of the note loaded into ``slot``."""
        start, end = self.note_starts.item(slot), self.note_starts.item(slot + 1)
        a, b, c = self.lengths[slot].tolist()
        return NoteEntry(
            key, cache_key, self.ids[start:end], self.frequencies[start:end], (a, b, c)
        )
