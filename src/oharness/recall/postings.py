"""Postings storage behind :class:`~oharness.recall.index.RecallIndex`.

Each note lives in a *slot* (a row of the per-note arrays); each term has the slots holding it
(ascending) and a matching ``(n, 3)`` array of its frequencies in summary, tags and body.

A first build into an empty store and a cache load adopt their notes as one
:class:`~oharness.recall.layout.Base` (flat arrays both ways: a term's postings are slices
of them, the new terms of a message read together, and a note's entry is made when first
read). What changes after
that is kept beside the base, copy on write: a term touched by an added or removed note gets
arrays of its own, a slot refilled holds its new entry. Freed slots are reused, so arrays
never grow past the largest number of notes held at once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from itertools import compress
from typing import Final, overload

import numpy as np
import numpy.typing as npt

from oharness.recall.layout import (
    FIELD_COUNT,
    Base,
    CacheKey,
    Columns,
    Found,
    FreqArray,
    IntArray,
    NoteEntry,
    NoteKey,
    TermOrder,
)
from oharness.recall.score import ScoringParams
from oharness.types import Scope

__all__ = [
    "FIELD_COUNT",
    "CacheKey",
    "Columns",
    "EntryView",
    "Found",
    "FreqArray",
    "IntArray",
    "NoteEntry",
    "NoteKey",
    "Postings",
    "TermOrder",
]

_EMPTY_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
_EMPTY_FREQUENCIES: Final[FreqArray] = np.empty((0, FIELD_COUNT), dtype=np.float32)
#: Every posting of the live notes: slot, term id and frequencies, each note's together.
Flat = tuple[npt.NDArray[np.intp], IntArray, FreqArray]


class EntryView:
    """Each slot's entry (None for a free slot), made when read; and all of them at once as
    flat arrays (:meth:`flat`), or the stamp of each slot's content (:meth:`stamps`)."""

    def __init__(self, postings: Postings) -> None:
        self._postings = postings

    def __len__(self) -> int:
        return len(self._postings._entries)

    @overload
    def __getitem__(self, slot: int) -> NoteEntry | None: ...

    @overload
    def __getitem__(self, slot: slice) -> list[NoteEntry | None]: ...

    def __getitem__(self, slot: int | slice) -> NoteEntry | list[NoteEntry | None] | None:
        if isinstance(slot, slice):
            return [self._postings.entry_at(n) for n in range(len(self))[slot]]
        return self._postings.entry_at(slot)

    def __iter__(self) -> Iterator[NoteEntry | None]:
        return (self._postings.entry_at(slot) for slot in range(len(self)))

    def flat(self) -> Flat:
        """Every live note's postings, each note's in its entry's order (notes by slot within
        the base, then the others by slot); read only (the base's own arrays when it can)."""
        return self._postings.flat()

    def body_lengths(self) -> npt.NDArray[np.float64]:
        """Body length (terms) per slot."""
        return self._postings.body_lengths()[: len(self)]

    def stamps(self) -> npt.NDArray[np.int64]:
        """Per slot, a number that changes whenever the slot gets another entry or is freed."""
        return self._postings.stamps[: len(self)]


class Postings:
    """Term postings and per-note rows; see the module docstring."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.terms: list[str] = []
        self._base: Base | None = None
        self._own: dict[int, tuple[IntArray, FreqArray]] = {}  # terms changed since the base
        self.slot_of: dict[NoteKey, int] = {}
        self.owners: list[NoteKey] = []
        self.cache_keys: dict[NoteKey, CacheKey] = {}
        self._entries: list[NoteEntry | None] = []  # None: free, or in the base and not read
        self._in_base = np.zeros(0, dtype=np.bool_)  # per slot: holds its base entry
        self._added: set[int] = set()  # slots holding an entry not of the base
        self._free: list[int] = []
        self._lengths = np.zeros((16, FIELD_COUNT), dtype=np.float64)
        self.stamps = np.zeros(16, dtype=np.int64)
        self._stamped = 0
        self._totals = [0, 0, 0]
        self._norms: npt.NDArray[np.float32] | None = None
        self._norms_params: ScoringParams | None = None
        #: Moves on every change of the notes held (what derived per-term data depends on).
        self.version = 0
        self._held_by = np.zeros(0, dtype=np.int32)  # notes per term id (at least len(terms))

    def __len__(self) -> int:
        return len(self.slot_of)

    def term_id(self, term: str) -> int:
        """The id of ``term``, creating it when new."""
        found = self.vocabulary.get(term)
        if found is not None:
            return found
        new = len(self.terms)
        self.vocabulary[term] = new
        self.terms.append(term)
        return new

    def entry(
        self,
        scope: Scope,
        note_id: str,
        cache_key: CacheKey | None,
        fields: tuple[Mapping[str, int], Mapping[str, int], Mapping[str, int]],
        marks: Iterable[str] = (),
    ) -> NoteEntry:
        """Build a note's entry from its per-field term counts.

        ``marks`` are terms held with no frequency in any field (phrases of the summary,
        links): they can be looked up but never score or count towards a field's length.
        """
        summary, tags, body = fields
        union = dict(body)  # body terms first: most terms only occur there
        for term in (*tags, *summary, *marks):
            union.setdefault(term, 0)
        vocabulary = self.vocabulary
        known = len(vocabulary)
        # One look-up per term: a new term gets the next id (the length before it is added).
        add = vocabulary.setdefault
        ids = np.array([add(term, len(vocabulary)) for term in union], dtype=np.int32)
        if len(vocabulary) > known:
            self.terms.extend(compress(union, (ids >= known).tolist()))
        count = len(union)
        frequencies = np.zeros((count, FIELD_COUNT), dtype=np.float32)
        frequencies[:, 2] = np.fromiter(union.values(), np.float32, count)
        if tags or summary:
            position = dict(zip(union, range(count), strict=True))
            for field, counts in ((0, summary), (1, tags)):
                for term, times in counts.items():
                    frequencies[position[term], field] = times
        lengths = (sum(summary.values()), sum(tags.values()), sum(body.values()))
        return NoteEntry((scope, note_id), cache_key, ids, frequencies, lengths)

    def lookup(self, term: str) -> tuple[IntArray, FreqArray] | None:
        """The slots holding a term and its frequencies there, or None when no note has it."""
        term_id = self.vocabulary.get(term)
        if term_id is None:
            return None
        found = self._term(term_id)
        return found if len(found[0]) else None

    def lookup_many(self, terms: Sequence[str]) -> Found:
        """The postings of the terms of ``terms`` some note holds, concatenated (:class:`Found`).

        A term no note has costs one dictionary look-up; the base's postings of the others are
        gathered together, in one go, and not kept (the caller keeps what it derives).
        """
        vocabulary, own, base = self.vocabulary, self._own, self._base
        in_base = base.term_count if base is not None else 0
        positions: list[int] = []  # the terms to gather from the base
        term_ids: list[int] = []
        kept: list[tuple[int, tuple[IntArray, FreqArray]]] = []
        for position, term in enumerate(terms):
            term_id = vocabulary.get(term)
            if term_id is None:
                continue
            held = own.get(term_id)
            if held is None:
                if term_id < in_base:
                    positions.append(position)
                    term_ids.append(term_id)
            elif len(held[0]):
                kept.append((position, held))
        if not positions:
            return Found.of(kept)
        assert base is not None
        bounds, slots, frequencies = base.gather(term_ids)
        found = Found(positions, bounds, slots, frequencies)
        if not base.gapless:
            found = found.without_empty()
        return found.extended(kept)

    def slots_of_ids(self, term_ids: list[int]) -> list[IntArray | None]:
        """The slots holding each term of ``term_ids`` (None where no note does), not kept
        (the caller keeps what it needs): a base term's are a view of the base's slots (no
        copy; they never change), a changed term's its own array."""
        own, base = self._own, self._base
        found: list[IntArray | None] = [None] * len(term_ids)
        in_base = base.term_count if base is not None else 0
        for number, term_id in enumerate(term_ids):
            held = own.get(term_id)
            if held is not None:
                if len(held[0]):
                    found[number] = held[0]
            elif term_id < in_base:
                assert base is not None
                start, end = base.term_starts.item(term_id), base.term_starts.item(term_id + 1)
                if end > start:
                    found[number] = base.term_slots[start:end]
        return found

    @property
    def base(self) -> Base | None:
        """The notes loaded or first built together, as flat arrays (None: none); a term
        some note changed since has its postings in :attr:`changed` instead."""
        return self._base

    @property
    def changed(self) -> Mapping[int, tuple[IntArray, FreqArray]]:
        """The postings of the terms changed since the base (or read once), by term id; read
        only. A base term not in it holds the base's postings."""
        return self._own

    def _term(self, term_id: int) -> tuple[IntArray, FreqArray]:
        own = self._own.get(term_id)
        if own is not None:
            return own
        if self._base is not None and term_id < self._base.term_count:
            found = self._own[term_id] = self._base.term(term_id)  # gathered once
            return found
        return _EMPTY_SLOTS, _EMPTY_FREQUENCIES

    def entry_of(self, key: NoteKey) -> NoteEntry:
        """The indexed form of a note (KeyError when absent)."""
        entry = self.entry_at(self.slot_of[key])
        assert entry is not None
        return entry

    def entry_at(self, slot: int) -> NoteEntry | None:
        """The entry held in ``slot``, None when it is free."""
        entry = self._entries[slot]
        if entry is not None or self._base is None:
            return entry
        if slot < len(self._in_base) and self._in_base[slot]:  # made when first read
            key = self.owners[slot]
            entry = self._entries[slot] = self._base.entry(slot, key, self.cache_keys.get(key))
        return entry

    def entries_by_slot(self) -> EntryView:
        """Each slot's entry (None for a free slot); read only."""
        return EntryView(self)

    def flat(self) -> Flat:
        """See :meth:`EntryView.flat`."""
        parts: list[Flat] = []
        base = self._base
        if base is not None:
            live = self._in_base[: base.note_count]
            if live.all():
                parts.append((base.owner, base.ids, base.frequencies))
            else:
                kept = live[base.owner]
                parts.append((base.owner[kept], base.ids[kept], base.frequencies[kept]))
        added = [(slot, self._entries[slot]) for slot in sorted(self._added)]
        entries = [(slot, entry) for slot, entry in added if entry is not None]
        if entries or not parts:
            counts = [len(entry.term_ids) for _, entry in entries]
            parts.append(
                (
                    np.repeat(np.array([slot for slot, _ in entries], dtype=np.intp), counts),
                    np.concatenate([_EMPTY_SLOTS, *(entry.term_ids for _, entry in entries)]),
                    np.concatenate(
                        [_EMPTY_FREQUENCIES, *(entry.frequencies for _, entry in entries)]
                    ),
                )
            )
        if len(parts) == 1:
            return parts[0]
        return (
            np.concatenate([part[0] for part in parts]),
            np.concatenate([part[1] for part in parts]),
            np.concatenate([part[2] for part in parts]),
        )

    def document_frequency(self, term_id: int) -> int:
        """How many notes hold the term."""
        return int(self._held(len(self.terms))[term_id])

    def document_frequencies(self, term_ids: IntArray) -> IntArray:
        """How many notes hold each of the terms."""
        return self._held(len(self.terms))[term_ids]

    def _held(self, size: int) -> IntArray:
        """The per-term note counts, grown to at least ``size`` terms."""
        if len(self._held_by) < size:
            grown = np.zeros(max(size, 2 * len(self._held_by)), dtype=np.int32)
            grown[: len(self._held_by)] = self._held_by
            self._held_by = grown
        return self._held_by

    def slots_of(self, keys: Collection[NoteKey | str]) -> list[int]:
        """Slots of the given notes; a bare id names that id in both scopes."""
        slots: list[int] = []
        for key in keys:
            candidates: list[NoteKey] = (
                [("project", key), ("user", key)] if isinstance(key, str) else [key]
            )
            slots.extend(self.slot_of[c] for c in candidates if c in self.slot_of)
        return slots

    def body_lengths(self) -> npt.NDArray[np.float64]:
        """Body length (terms) per slot."""
        return self._lengths[:, 2]

    def norms(self, params: ScoringParams) -> npt.NDArray[np.float32]:
        """Per slot and field: ``boost / (1 - b + b * length / average length)``."""
        if self._norms is not None and self._norms_params == params:
            return self._norms
        count = max(1, len(self.slot_of))
        norms = np.empty(self._lengths.shape, dtype=np.float32)
        # Field by field with scalars (several times faster than broadcasting over rows of
        # three): boost / ((1 - b) + b * (length / average)), in float64, then float32.
        for field, (total, boost, b) in enumerate(
            zip(self._totals, params.boosts, params.length_factors, strict=True)
        ):
            column = self._lengths[:, field] / (total / count or 1.0)
            column *= b
            column += 1.0 - b
            np.divide(boost, column, out=column)
            norms[:, field] = column
        self._norms = norms
        self._norms_params = params
        return norms

    def insert(self, entries: list[NoteEntry]) -> None:
        """Add or replace notes."""
        latest = {entry.key: entry for entry in entries}
        for key in latest:
            self.delete(key)
        batch = list(latest.values())
        if not batch:
            return
        if not self._entries and self._base is None and len(batch) > 1:
            self._adopt(Columns.of(batch), batch)  # a first build: the bulk layout
            return
        slots = [self._allocate(entry) for entry in batch]
        self._added.update(slots)
        if len(batch) == 1:
            entry, slot = batch[0], slots[0]
            single = np.array([slot], dtype=np.int32)
            for row, term_id in enumerate(entry.term_ids.tolist()):
                self._append(term_id, single, entry.frequencies[row : row + 1])
            self._held(len(self.terms))[entry.term_ids] += 1
            return
        self._group(batch, slots)

    def insert_columns(self, columns: Columns) -> None:
        """Add or replace the notes of ``columns``, whose term ids are this vocabulary's (a
        bulk build): into an empty store as its base, as made; else as :meth:`insert` does."""
        keys = columns.keys
        fresh = not self._entries and self._base is None
        distinct = len(set(keys)) == len(keys)
        if fresh and len(keys) > 1 and distinct and columns.by_term is not None:
            self._adopt(columns, None)
        else:
            self.insert(columns.entries())

    def load(
        self,
        terms: list[str],
        entries: list[NoteEntry],
        order: IntArray,
        flat: tuple[IntArray, FreqArray] | None = None,
    ) -> None:
        """Fill an empty store from entries whose ids index ``terms``, skipping the sort.

        ``order`` lists the positions of the entries' concatenated postings sorted by term id
        (stable); ``flat`` may hand over that concatenation when the caller has it.
        """
        columns = Columns.of(entries)
        if flat is not None:
            columns = columns._replace(ids=flat[0], frequencies=flat[1])
        self.adopt(terms, columns._replace(by_term=columns.term_order(len(terms), order)))

    def adopt(self, terms: list[str], columns: Columns) -> None:
        """Add the notes of ``columns``, whose term ids index ``terms``: into an empty store
        as its base, without a Python object per note or term; else one by one."""
        if self.slot_of or self.terms or self._entries:
            self.insert(self.translate(terms, columns.entries()))
            return
        self.terms = list(terms)
        self.vocabulary = dict(zip(self.terms, range(len(self.terms)), strict=True))
        if len(columns.keys):
            self._adopt(columns, None)

    def _adopt(self, columns: Columns, entries: list[NoteEntry] | None) -> None:
        """Make ``columns`` the base, in slots 0.. (``entries``: their entries, when made)."""
        count = len(columns.keys)
        base = self._base = Base(columns, len(self.terms))
        self._held_by = base.held.copy()
        keys = columns.keys
        self.owners = list(keys)
        self._entries = list(entries) if entries is not None else [None] * count
        self._in_base = np.ones(count, dtype=np.bool_)
        self.slot_of = dict(zip(keys, range(count), strict=True))
        self.cache_keys = {
            key: cache_key
            for key, cache_key in zip(keys, columns.cache_keys, strict=True)
            if cache_key is not None
        }
        # The capacity one by one would reach (16, doubled): the scorer's dense or sparse
        # choice depends on it, so a loaded index answers to the last bit as one built.
        capacity = 16 << max(0, (count - 1) // 16).bit_length()
        self._lengths = np.zeros((capacity, FIELD_COUNT), dtype=np.float64)
        self._lengths[:count] = columns.lengths
        self._totals = [int(total) for total in columns.lengths.sum(axis=0)]
        self.stamps = np.zeros(capacity, dtype=np.int64)
        self.stamps[:count] = np.arange(1, count + 1)
        self._stamped = count
        self._changed()

    def _group(self, batch: list[NoteEntry], slots: list[int]) -> None:
        """Append the batch's postings to each term, visiting them in term order."""
        ids = np.concatenate([entry.term_ids for entry in batch])
        if len(ids) == 0:  # notes without a single word ("🚀", "..."): nothing to post
            return
        frequencies = np.concatenate([entry.frequencies for entry in batch])
        order = np.argsort(ids, kind="stable")
        ids, frequencies = ids[order], frequencies[order]
        owner = np.repeat(np.array(slots, dtype=np.int32), [len(e.term_ids) for e in batch])
        owner = owner[order]
        bounds = np.flatnonzero(np.diff(ids)) + 1
        starts = [0, *bounds.tolist()]
        ends = [*bounds.tolist(), len(ids)]
        held = self._held(len(self.terms))
        held[ids[starts]] += np.diff(np.array([*starts, len(ids)], dtype=np.int32))
        for term_id, start, end in zip(ids[starts].tolist(), starts, ends, strict=True):
            self._append(term_id, owner[start:end], frequencies[start:end])

    def delete(self, key: NoteKey) -> bool:
        """Remove a note; False when absent."""
        slot = self.slot_of.get(key)
        if slot is None:
            return False
        entry = self.entry_at(slot)
        assert entry is not None
        del self.slot_of[key]
        self._held(len(self.terms))[entry.term_ids] -= 1
        for term_id in entry.term_ids.tolist():
            slots, frequencies = self._term(term_id)
            keep = slots != slot
            self._own[term_id] = (slots[keep], frequencies[keep])
        self._entries[slot] = None
        if slot < len(self._in_base):
            self._in_base[slot] = False
        self._added.discard(slot)
        self.cache_keys.pop(key, None)
        for field, length in enumerate(entry.lengths):
            self._totals[field] -= length
        self._lengths[slot] = 0.0
        self._stamp(slot)
        self._free.append(slot)
        self._changed()
        return True

    def export(self) -> tuple[list[str], list[NoteEntry]]:
        """Every entry with term ids into a compacted vocabulary (terms still in use)."""
        entries = [entry for entry in self.entries_by_slot() if entry is not None]
        held = self._held(len(self.terms))[: len(self.terms)]
        used = np.flatnonzero(held > 0)
        if len(used) == len(self.terms):
            return list(self.terms), entries
        remap = np.full(len(self.terms), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        terms = [self.terms[term_id] for term_id in used.tolist()]
        return terms, [e._replace(term_ids=remap[e.term_ids]) for e in entries]

    def translate(self, terms: list[str], entries: Iterable[NoteEntry]) -> list[NoteEntry]:
        """Entries whose term ids index ``terms``, re-expressed in this vocabulary."""
        remap = np.fromiter((self.term_id(term) for term in terms), np.int32, len(terms))
        return [entry._replace(term_ids=remap[entry.term_ids]) for entry in entries]

    def _allocate(self, entry: NoteEntry) -> int:
        if self._free:
            slot = self._free.pop()
            self._entries[slot] = entry
            self.owners[slot] = entry.key
        else:
            slot = len(self._entries)
            self._entries.append(entry)
            self.owners.append(entry.key)
            if slot >= self._lengths.shape[0]:
                grown = np.zeros((self._lengths.shape[0] * 2, FIELD_COUNT), dtype=np.float64)
                grown[:slot] = self._lengths[:slot]
                self._lengths = grown
                self.stamps = np.concatenate((self.stamps, np.zeros_like(self.stamps)))
        self.slot_of[entry.key] = slot
        if entry.cache_key is not None:
            self.cache_keys[entry.key] = entry.cache_key
        self._lengths[slot] = entry.lengths
        for field, length in enumerate(entry.lengths):
            self._totals[field] += length
        self._stamp(slot)
        self._changed()
        return slot

    def _stamp(self, slot: int) -> None:
        self._stamped += 1
        self.stamps[slot] = self._stamped

    def _changed(self) -> None:
        self._norms = None
        self.version += 1

    def _append(self, term_id: int, slots: IntArray, frequencies: FreqArray) -> None:
        held_slots, held_frequencies = self._term(term_id)
        if len(held_slots):
            slots = np.concatenate((held_slots, slots))
            frequencies = np.concatenate((held_frequencies, frequencies))
        self._own[term_id] = (slots, frequencies)
