"""The postings of the recall index: which notes hold each term, and how often (spec 03.3).

Each note lives in a *slot*; each term has an id. The postings of a term are the slots holding
it, each with the term's counts in the note's summary, tags and body. They are kept in term
order and compactly, as compressed sparse rows (CSR):

- the notes of a build or a cache load form the *base*: ``starts`` (per term id, where its
  postings begin), ``slots`` (int32) and ``counts`` (three uint16 per posting), ten bytes a
  posting, never written to;
- a note added later has its postings kept beside the base, per term; a note removed or
  replaced leaves its slot dead, its postings skipped when read;
- when the notes changed since the base outnumber an eighth of it, the base is made again
  from every live posting (slots renumbered).

A note's own terms are not kept whole (the postings hold them): only those the recall gate
reads for every candidate - the terms of its summary and tags (its *head*), and for a short
note the other terms of its body - each sorted by term id. Per term the number of notes
holding it, and holding it in their summary or tags, is kept up to date.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Final, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from oharness.recall.vocabulary import Vocabulary
from oharness.types import Scope

NoteKey = tuple[Scope, str]
#: A caller's proof that a note is unchanged, e.g. ``(mtime_ns, size, inode)`` or a hash.
CacheKey = str | int | tuple[int, ...]
IntArray = npt.NDArray[np.int32]
CountArray = npt.NDArray[np.uint16]
FIELD_COUNT: Final = 3  # summary, tags, body
_NO_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
_NO_COUNTS: Final[CountArray] = np.empty((0, FIELD_COUNT), dtype=np.uint16)
#: The base is made again when more notes than this share of it (1/8) changed since.
_REBUILD_SHARE: Final = 8
_REBUILD_LEAST: Final = 64
_BLOCK: Final = 1 << 16  # postings read at once when a base is adopted


class NoteEntry(NamedTuple):
    """A note's indexed form: its term ids (ascending) and their counts per field."""

    key: NoteKey
    cache_key: CacheKey | None
    term_ids: IntArray
    frequencies: CountArray  # shape (len(term_ids), 3): summary, tags, body
    lengths: tuple[int, int, int]  # terms per field, for length normalisation


class Notes(NamedTuple):
    """Notes as columns (what the cache stores beside the postings), slot ``n`` for row ``n``."""

    keys: list[NoteKey]
    cache_keys: list[CacheKey | None]
    lengths: npt.NDArray[np.int64]  # (notes, 3): terms per field

    @classmethod
    def of(cls, entries: list[NoteEntry]) -> Notes:
        """The columns of ``entries``."""
        lengths = np.array([entry.lengths for entry in entries], dtype=np.int64)
        return cls(
            [entry.key for entry in entries],
            [entry.cache_key for entry in entries],
            lengths.reshape(-1, FIELD_COUNT),
        )


class TermOrder(NamedTuple):
    """Postings in term order: per term id how many, then each term's slots (ascending) and
    counts, term after term."""

    held: IntArray
    slots: IntArray
    counts: CountArray


class Postings:
    """Term postings and per-note rows; see the module docstring."""

    def __init__(self, short_body: int) -> None:
        self.short_body = short_body
        self.vocabulary = Vocabulary()
        self.keys: list[NoteKey | None] = []  # per slot; None: a dead slot
        self.slot_of: dict[NoteKey, int] = {}
        self.cache_keys: dict[NoteKey, CacheKey] = {}
        self.lengths = np.zeros((0, FIELD_COUNT), dtype=np.float64)  # per slot
        self.totals = [0, 0, 0]
        self.heads: list[IntArray] = []  # per slot: its summary and tags terms
        self.bodies: dict[int, IntArray] = {}  # per short note: its other body terms
        self.held = np.zeros(0, dtype=np.int32)  # per term: notes holding it
        self.head_held = np.zeros(0, dtype=np.int32)  # ... in their summary or tags
        self.version = 0  # moves on every change
        self._norms = (-1, np.zeros((0, FIELD_COUNT), dtype=np.float64))
        self._starts = np.zeros(1, dtype=np.int64)
        self._slots, self._counts = _NO_SLOTS, _NO_COUNTS
        self._base_notes = 0
        self._dead = np.zeros(0, dtype=np.bool_)  # per base slot
        self._changed_notes = 0
        self._dead_count = 0
        self._added: dict[int, list[tuple[int, int, int, int]]] = {}  # term -> (slot, counts)
        self._added_rows: dict[int, NoteEntry] = {}  # per slot after the base

    def __len__(self) -> int:
        return len(self.slot_of)

    def term_ids(self, terms: Iterable[str]) -> IntArray:
        """The id of each term, a new term getting the next."""
        vocabulary = self.vocabulary
        ids = vocabulary.add_many(list(terms))
        if len(vocabulary) > len(self.held):
            grow = np.zeros(max(len(vocabulary), 2 * len(self.held)) - len(self.held), np.int32)
            self.held = np.concatenate((self.held, grow))
            self.head_held = np.concatenate((self.head_held, grow))
        return np.array(ids, dtype=np.int32)

    # -- reading ---------------------------------------------------------------------------

    def postings(self, term_id: int) -> tuple[IntArray, CountArray]:
        """The live slots holding a term and its counts there."""
        slots, counts = _NO_SLOTS, _NO_COUNTS
        if term_id + 1 < len(self._starts):
            start, end = self._starts.item(term_id), self._starts.item(term_id + 1)
            slots, counts = self._slots[start:end], self._counts[start:end]
            if self._dead_count and len(slots):
                alive = ~self._dead[slots]
                slots, counts = slots[alive], counts[alive]
        added = self._added.get(term_id)
        if added:
            extra = np.array(added, dtype=np.int64)
            slots = np.concatenate((slots, extra[:, 0].astype(np.int32)))
            counts = np.concatenate((counts, extra[:, 1:].astype(np.uint16)))
        return slots, counts

    def slots_of(self, term: str) -> IntArray | None:
        """The slots holding ``term``, None when no note does."""
        return self.slots_of_many([term])[0]

    def slots_of_many(self, terms: list[str]) -> list[IntArray | None]:
        """The slots holding each term, None where no note does."""
        found: list[IntArray | None] = []
        for term_id in self.vocabulary.get_many(terms):
            slots = self.postings(term_id)[0] if term_id is not None else None
            found.append(slots if slots is not None and len(slots) else None)
        return found

    def slots_of_keys(self, keys: Collection[NoteKey | str]) -> list[int]:
        """Slots of the given notes; a bare id names that id in both scopes."""
        found: list[int] = []
        for key in keys:
            named: list[NoteKey] = (
                [("project", key), ("user", key)] if isinstance(key, str) else [key]
            )
            found.extend(self.slot_of[k] for k in named if k in self.slot_of)
        return found

    def entry_at(self, slot: int) -> NoteEntry:
        """The indexed form of the note in ``slot``."""
        return self.entries_at([slot])[0]

    def entries_at(self, slots: list[int]) -> list[NoteEntry]:
        """The indexed form of the notes in ``slots``: a base note's gathered from the
        postings (one pass over them for all)."""
        base = [slot for slot in slots if slot not in self._added_rows]
        wanted = np.zeros(len(self.keys), dtype=np.bool_)
        wanted[base] = True
        at = np.flatnonzero(wanted[self._slots]) if base else _NO_SLOTS
        owner = self._slots[at]
        found: list[NoteEntry] = []
        for slot in slots:
            added = self._added_rows.get(slot)
            if added is not None:
                found.append(added)
                continue
            mine = at[owner == slot]
            term_ids = (np.searchsorted(self._starts, mine, side="right") - 1).astype(np.int32)
            key = self.keys[slot]
            assert key is not None
            lengths = _three(self.lengths[slot].astype(np.int64).tolist())
            found.append(
                NoteEntry(key, self.cache_keys.get(key), term_ids, self._counts[mine], lengths)
            )
        return found

    def norms(self, boosts: Iterable[float], factors: Iterable[float]) -> npt.NDArray[np.float64]:
        """Per slot and field: ``boost / (1 - b + b * length / average length)``; kept until
        the notes change."""
        if self._norms[0] == self.version:
            return self._norms[1]
        count = max(1, len(self.slot_of))
        norms = np.empty(self.lengths.shape, dtype=np.float64)
        for field, (total, boost, b) in enumerate(zip(self.totals, boosts, factors, strict=True)):
            norms[:, field] = boost / (
                (1.0 - b) + b * (self.lengths[:, field] / (total / count or 1.0))
            )
        self._norms = (self.version, norms)
        return norms

    # -- changes ---------------------------------------------------------------------------

    def add(self, entry: NoteEntry) -> None:
        """Add or replace a note (its term ids already this vocabulary's)."""
        self.remove(entry.key)
        slot = self._new_slot(entry)
        self._added_rows[slot] = entry
        added = self._added
        for term_id, (a, b, c) in zip(
            entry.term_ids.tolist(), entry.frequencies.tolist(), strict=True
        ):
            added.setdefault(term_id, []).append((slot, a, b, c))
        self._count(entry, 1)
        self._changed_notes += 1
        self._maybe_rebuild()

    def remove(self, key: NoteKey) -> bool:
        """Remove a note; False when absent."""
        slot = self.slot_of.pop(key, None)
        if slot is None:
            return False
        entry = self.entry_at(slot)
        self._count(entry, -1)
        if slot < self._base_notes:
            self._dead[slot] = True
            self._dead_count += 1
        else:
            del self._added_rows[slot]
            for term_id in entry.term_ids.tolist():
                kept = [posting for posting in self._added[term_id] if posting[0] != slot]
                if kept:
                    self._added[term_id] = kept
                else:
                    del self._added[term_id]
        self.keys[slot] = None
        self.cache_keys.pop(key, None)
        self.heads[slot] = _NO_SLOTS
        self.bodies.pop(slot, None)
        for field, length in enumerate(entry.lengths):
            self.totals[field] -= length
        self.lengths[slot] = 0.0
        self._changed_notes += 1
        self.version += 1
        self._maybe_rebuild()
        return True

    def empty(self) -> bool:
        """Whether no note was ever added (a base may be adopted)."""
        return not self.keys

    def adopt(self, notes: Notes, order: TermOrder) -> None:
        """Make the base of an empty index: ``notes`` in slots 0.. and their postings in term
        order, whose term ids are this vocabulary's."""
        count = len(notes.keys)
        self.keys = list(notes.keys)
        self.slot_of = dict(zip(notes.keys, range(count), strict=True))
        self.cache_keys = {
            key: cache_key
            for key, cache_key in zip(notes.keys, notes.cache_keys, strict=True)
            if cache_key is not None
        }
        self.lengths = notes.lengths.astype(np.float64)
        self.totals = [int(total) for total in notes.lengths.sum(axis=0)]
        self.version += 1
        term_count = len(self.vocabulary)
        self.held = np.zeros(term_count, dtype=np.int32)
        self.held[: len(order.held)] = order.held
        self._set_base(order, count)
        short = self.lengths[:count, 2] <= self.short_body
        in_head, in_body = _head_and_body(order, short)
        ends = self._starts[1:]
        head_ids = np.searchsorted(ends, in_head, side="right").astype(np.int32)
        self.head_held = np.bincount(head_ids, minlength=term_count).astype(np.int32)
        self.heads = _rows_by_slot(head_ids, order.slots[in_head], count)
        body_ids = np.searchsorted(ends, in_body, side="right").astype(np.int32)
        bodies = _rows_by_slot(body_ids, order.slots[in_body], count)
        self.bodies = {slot: bodies[slot] for slot in np.flatnonzero(short).tolist()}

    def term_order(self) -> tuple[Notes, TermOrder]:
        """Every note (slots renumbered from 0) and its postings in term order."""
        self._rebuild()
        keys = cast(list[NoteKey], self.keys)  # no dead slot after a rebuild
        notes = Notes(
            keys,
            [self.cache_keys.get(key) for key in keys],
            self.lengths[: len(keys)].astype(np.int64),
        )
        return notes, TermOrder(np.diff(self._starts).astype(np.int32), self._slots, self._counts)

    def _new_slot(self, entry: NoteEntry) -> int:
        slot = len(self.keys)
        self.keys.append(entry.key)
        self.slot_of[entry.key] = slot
        if entry.cache_key is not None:
            self.cache_keys[entry.key] = entry.cache_key
        if slot >= len(self.lengths):
            grown = np.zeros((max(16, 2 * slot), FIELD_COUNT), dtype=np.float64)
            grown[:slot] = self.lengths[:slot]
            self.lengths = grown
        self.lengths[slot] = entry.lengths
        for field, length in enumerate(entry.lengths):
            self.totals[field] += length
        in_head = (entry.frequencies[:, 0] > 0) | (entry.frequencies[:, 1] > 0)
        self.heads.append(entry.term_ids[in_head])
        if entry.lengths[2] <= self.short_body:
            self.bodies[slot] = entry.term_ids[~in_head & (entry.frequencies[:, 2] > 0)]
        self.version += 1
        return slot

    def _count(self, entry: NoteEntry, step: int) -> None:
        self.held[entry.term_ids] += step
        in_head = (entry.frequencies[:, 0] > 0) | (entry.frequencies[:, 1] > 0)
        self.head_held[entry.term_ids[in_head]] += step

    def _set_base(self, order: TermOrder, notes: int) -> None:
        self._starts = np.zeros(len(order.held) + 1, dtype=np.int64)
        np.cumsum(order.held, out=self._starts[1:])
        self._slots, self._counts = order.slots, order.counts
        self._base_notes = notes
        self._dead = np.zeros(notes, dtype=np.bool_)
        self._added, self._added_rows = {}, {}
        self._changed_notes = self._dead_count = 0

    def _maybe_rebuild(self) -> None:
        if self._changed_notes > max(_REBUILD_LEAST, self._base_notes // _REBUILD_SHARE):
            self._rebuild()

    def _rebuild(self) -> None:
        """Make the base again from every live posting, the live slots renumbered in order."""
        if not self._changed_notes and self._base_notes == len(self.keys):
            return
        live = np.array([key is not None for key in self.keys], dtype=np.bool_)
        renumber = (np.cumsum(live) - 1).astype(np.int32)
        term_count = len(self.vocabulary)
        ids = np.repeat(np.arange(len(self._starts) - 1, dtype=np.int64), np.diff(self._starts))
        slots, counts = self._slots, self._counts
        if self._added:
            added = sorted(
                (term_id, *posting) for term_id, items in self._added.items() for posting in items
            )
            extra = np.array(added, dtype=np.int64).reshape(-1, 5)
            ids = np.concatenate((ids, extra[:, 0]))
            slots = np.concatenate((slots, extra[:, 1].astype(np.int32)))
            counts = np.concatenate((counts, extra[:, 2:].astype(np.uint16)))
        keep = live[slots]
        ids, slots, counts = ids[keep], renumber[slots[keep]], counts[keep]
        order = np.argsort(ids * len(self.keys) + slots, kind="stable")
        held = np.bincount(ids, minlength=term_count).astype(np.int32)
        keys = [key for key in self.keys if key is not None]
        self.keys = list(keys)
        self.slot_of = {key: slot for slot, key in enumerate(keys)}
        kept = np.flatnonzero(live)
        self.lengths = self.lengths[kept].copy()
        self.heads = [self.heads[slot] for slot in kept.tolist()]
        self.bodies = {int(renumber[slot]): body for slot, body in self.bodies.items()}
        self._set_base(TermOrder(held, slots[order], counts[order]), len(self.keys))


def term_order(entries: list[NoteEntry], term_count: int) -> TermOrder:
    """The postings of ``entries`` (in slots 0..) in term order."""
    ids = np.concatenate([_NO_SLOTS, *(entry.term_ids for entry in entries)])
    counts = np.concatenate([_NO_COUNTS, *(entry.frequencies for entry in entries)])
    sizes = [len(entry.term_ids) for entry in entries]
    owner = np.repeat(np.arange(len(entries), dtype=np.int32), sizes)
    order = np.argsort(ids, kind="stable")
    held = np.bincount(ids, minlength=term_count).astype(np.int32)
    return TermOrder(held, owner[order], counts[order])


def _head_and_body(order: TermOrder, short: npt.NDArray[np.bool_]) -> tuple[IntArray, IntArray]:
    """Where the postings held in a summary or tags are, and those held only in the body of
    a short note; read in blocks (no posting-sized temporary array)."""
    heads: list[npt.NDArray[np.intp]] = []
    bodies: list[npt.NDArray[np.intp]] = []
    for start in range(0, len(order.slots), _BLOCK):
        counts = order.counts[start : start + _BLOCK]
        head = (counts[:, 0] > 0) | (counts[:, 1] > 0)
        heads.append(np.flatnonzero(head) + start)
        body = ~head & (counts[:, 2] > 0) & short[order.slots[start : start + _BLOCK]]
        bodies.append(np.flatnonzero(body) + start)
    return np.concatenate([_NO_SLOTS, *heads]), np.concatenate([_NO_SLOTS, *bodies])


def _rows_by_slot(term_ids: IntArray, slots: IntArray, count: int) -> list[IntArray]:
    """Per slot ``0 .. count - 1``, the term ids of the postings (in term order) it holds."""
    ordered = term_ids[np.argsort(slots, kind="stable")]
    ends = np.cumsum(np.bincount(slots, minlength=count)).tolist()
    return [ordered[start:end] for start, end in zip([0, *ends], ends, strict=False)]


def _three(lengths: list[int]) -> tuple[int, int, int]:
    return lengths[0], lengths[1], lengths[2]
