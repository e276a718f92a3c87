"""Postings storage behind :class:`~oharness.recall.index.RecallIndex`.

Each note lives in a *slot* (a row of the per-note arrays); each term has a numpy array of the
slots holding it and a matching ``(n, 3)`` array of its frequencies in summary, tags and body.
Adding a note appends to its terms' arrays; removing filters them. Bulk inserts group all
postings by term with one sort, which is what makes a first build and a cache load fast.
Freed slots are reused, so arrays never grow past the largest number of notes held at once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.recall.score import ScoringParams
from oharness.types import Scope

NoteKey = tuple[Scope, str]
#: A caller's proof that a note is unchanged, e.g. ``(mtime_ns, size, inode)`` or a hash.
CacheKey = str | int | tuple[int, ...]

IntArray = npt.NDArray[np.int32]
FreqArray = npt.NDArray[np.float32]
FIELD_COUNT: Final = 3  # summary, tags, body
_EMPTY_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
_EMPTY_FREQUENCIES: Final[FreqArray] = np.empty((0, FIELD_COUNT), dtype=np.float32)


class NoteEntry(NamedTuple):
    """A note's indexed form: its term ids and their per-field frequencies.

    A named tuple rather than a dataclass: a cache load creates one per note, and tuples are
    several times cheaper to build.
    """

    key: NoteKey
    cache_key: CacheKey | None
    term_ids: IntArray
    frequencies: FreqArray  # shape (len(term_ids), 3)
    lengths: tuple[int, int, int]  # terms per field, for length normalisation


class Postings:
    """Term postings and per-note rows; see the module docstring."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.terms: list[str] = []
        self._slots: list[IntArray] = []
        self._frequencies: list[FreqArray] = []
        self.slot_of: dict[NoteKey, int] = {}
        self.owners: list[NoteKey] = []
        self.cache_keys: dict[NoteKey, CacheKey] = {}
        self._entries: list[NoteEntry | None] = []
        self._free: list[int] = []
        self._lengths = np.zeros((16, FIELD_COUNT), dtype=np.float64)
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
        self._slots.append(_EMPTY_SLOTS)
        self._frequencies.append(_EMPTY_FREQUENCIES)
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
        found = list(map(self.vocabulary.get, union))
        ids = [
            self.term_id(term) if term_id is None else term_id
            for term, term_id in zip(union, found, strict=True)
        ]
        frequencies = np.zeros((len(union), FIELD_COUNT), dtype=np.float32)
        frequencies[:, 2] = np.fromiter(union.values(), np.float32, len(union))
        if tags or summary:
            position = dict(zip(union, range(len(union)), strict=True))
            for field, counts in ((0, summary), (1, tags)):
                for term, count in counts.items():
                    frequencies[position[term], field] = count
        lengths = (sum(summary.values()), sum(tags.values()), sum(body.values()))
        return NoteEntry(
            (scope, note_id), cache_key, np.array(ids, dtype=np.int32), frequencies, lengths
        )

    def lookup(self, term: str) -> tuple[IntArray, FreqArray] | None:
        """The slots holding a term and its frequencies there, or None when no note has it."""
        term_id = self.vocabulary.get(term)
        if term_id is None or len(self._slots[term_id]) == 0:
            return None
        return self._slots[term_id], self._frequencies[term_id]

    def entry_of(self, key: NoteKey) -> NoteEntry:
        """The indexed form of a note (KeyError when absent)."""
        entry = self._entries[self.slot_of[key]]
        assert entry is not None
        return entry

    def entries_by_slot(self) -> list[NoteEntry | None]:
        """Each slot's entry (None for a free slot); read only."""
        return self._entries

    def document_frequency(self, term_id: int) -> int:
        """How many notes hold the term."""
        return len(self._slots[term_id])

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
        averages = np.array([total / count or 1.0 for total in self._totals])
        b = np.array(params.length_factors)
        ratio = self._lengths / averages
        norms = np.array(params.boosts) / (1.0 - b + b * ratio)
        self._norms = norms.astype(np.float32)
        self._norms_params = params
        return self._norms

    def insert(self, entries: list[NoteEntry]) -> None:
        """Add or replace notes."""
        latest = {entry.key: entry for entry in entries}
        for key in latest:
            self.delete(key)
        batch = list(latest.values())
        if not batch:
            return
        slots = [self._allocate(entry) for entry in batch]
        if len(batch) == 1:
            entry, slot = batch[0], slots[0]
            single = np.array([slot], dtype=np.int32)
            for row, term_id in enumerate(entry.term_ids.tolist()):
                self._append(term_id, single, entry.frequencies[row : row + 1])
            self._held(len(self.terms))[entry.term_ids] += 1
            return
        ids = np.concatenate([entry.term_ids for entry in batch])
        frequencies = np.concatenate([entry.frequencies for entry in batch])
        self._group(batch, slots, np.argsort(ids, kind="stable"), (ids, frequencies))

    def load(
        self,
        terms: list[str],
        entries: list[NoteEntry],
        order: IntArray,
        flat: tuple[IntArray, FreqArray] | None = None,
    ) -> None:
        """Fill an empty store from entries whose ids index ``terms``, skipping the sort.

        ``order`` lists the positions of the entries' concatenated postings sorted by term id
        (the cache stores it); ``flat`` may hand over that concatenation when the caller has it.
        """
        if self.slot_of or self.terms:
            raise ValueError("load() needs an empty store")
        self.terms = list(terms)
        self.vocabulary = dict(zip(self.terms, range(len(self.terms)), strict=True))
        self._slots = [_EMPTY_SLOTS] * len(self.terms)
        self._frequencies = [_EMPTY_FREQUENCIES] * len(self.terms)
        self._held_by = np.zeros(len(self.terms), dtype=np.int32)
        if not entries:
            return
        # The per-note bookkeeping of _allocate, done for all notes at once.
        keys = [entry.key for entry in entries]
        self.owners = keys
        self._entries = list(entries)
        self.slot_of = dict(zip(keys, range(len(keys)), strict=True))
        self.cache_keys = {e.key: e.cache_key for e in entries if e.cache_key is not None}
        lengths = np.array([entry.lengths for entry in entries], dtype=np.float64)
        self._lengths = np.zeros((max(16, len(entries)), FIELD_COUNT), dtype=np.float64)
        self._lengths[: len(entries)] = lengths
        self._totals = [int(total) for total in lengths.sum(axis=0)]
        self._changed()
        self._group(entries, list(range(len(entries))), order, flat)

    def _group(
        self,
        batch: list[NoteEntry],
        slots: list[int],
        order: npt.NDArray[np.integer[Any]],
        flat: tuple[IntArray, FreqArray] | None = None,
    ) -> None:
        """Append the batch's postings to each term, visiting them in term order."""
        if flat is None:
            flat = (
                np.concatenate([entry.term_ids for entry in batch]),
                np.concatenate([entry.frequencies for entry in batch]),
            )
        ids, frequencies = flat[0][order], flat[1][order]
        if len(ids) == 0:  # notes without a single word ("🚀", "..."): nothing to post
            return
        owner = np.repeat(np.array(slots, dtype=np.int32), [len(e.term_ids) for e in batch])
        owner = owner[order]
        bounds = np.flatnonzero(np.diff(ids)) + 1
        starts = [0, *bounds.tolist()]
        ends = [*bounds.tolist(), len(ids)]
        held = self._held(len(self.terms))
        held[ids[starts]] += np.diff(np.array([*starts, len(ids)], dtype=np.int32))
        all_slots, all_frequencies = self._slots, self._frequencies
        for term_id, start, end in zip(ids[starts].tolist(), starts, ends, strict=True):
            if len(all_slots[term_id]):
                self._append(term_id, owner[start:end], frequencies[start:end])
            else:  # the common case on a first build or a load: no copy, a view
                all_slots[term_id] = owner[start:end]
                all_frequencies[term_id] = frequencies[start:end]

    def delete(self, key: NoteKey) -> bool:
        """Remove a note; False when absent."""
        slot = self.slot_of.pop(key, None)
        if slot is None:
            return False
        entry = self._entries[slot]
        assert entry is not None
        self._held(len(self.terms))[entry.term_ids] -= 1
        for term_id in entry.term_ids.tolist():
            keep = self._slots[term_id] != slot
            self._slots[term_id] = self._slots[term_id][keep]
            self._frequencies[term_id] = self._frequencies[term_id][keep]
        self._entries[slot] = None
        self.cache_keys.pop(key, None)
        for field, length in enumerate(entry.lengths):
            self._totals[field] -= length
        self._lengths[slot] = 0.0
        self._free.append(slot)
        self._changed()
        return True

    def export(self) -> tuple[list[str], list[NoteEntry]]:
        """Every entry with term ids into a compacted vocabulary (terms still in use)."""
        entries = [entry for entry in self._entries if entry is not None]
        used = [term_id for term_id, slots in enumerate(self._slots) if len(slots)]
        if len(used) == len(self.terms):
            return list(self.terms), entries
        remap = np.full(len(self.terms), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        terms = [self.terms[term_id] for term_id in used]
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
        self.slot_of[entry.key] = slot
        if entry.cache_key is not None:
            self.cache_keys[entry.key] = entry.cache_key
        self._lengths[slot] = entry.lengths
        for field, length in enumerate(entry.lengths):
            self._totals[field] += length
        self._changed()
        return slot

    def _changed(self) -> None:
        self._norms = None
        self.version += 1

    def _append(self, term_id: int, slots: IntArray, frequencies: FreqArray) -> None:
        if len(self._slots[term_id]):
            slots = np.concatenate((self._slots[term_id], slots))
            frequencies = np.concatenate((self._frequencies[term_id], frequencies))
        self._slots[term_id] = slots
        self._frequencies[term_id] = frequencies
