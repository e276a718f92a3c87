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
note the other terms of its body - each sorted by term id, read off the base's postings into
one array (:class:`Rows`). Per term the number of notes holding it, and holding it in their
summary or tags, is kept up to date.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from itertools import islice
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
#: Reads the base's postings ``start .. end`` from where they are stored (the cache file).
Read = Callable[[int, int], tuple[IntArray, CountArray]]
FIELD_COUNT: Final = 3  # summary, tags, body
_NO_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
_NO_COUNTS: Final[CountArray] = np.empty((0, FIELD_COUNT), dtype=np.uint16)
#: The base is made again when more notes than this share of it (1/8) changed since.
_REBUILD_SHARE: Final = 8
_REBUILD_LEAST: Final = 64
_BLOCK: Final = 1 << 16  # postings read at once when a base is made
_BLOCK_NOTES: Final = 1024  # notes whose postings a first build gathers at once


class NoteEntry(NamedTuple):
    """A note's indexed form: its term ids (ascending) and their counts per field."""

    key: NoteKey
    cache_key: CacheKey | None
    term_ids: IntArray
    frequencies: CountArray  # shape (len(term_ids), 3): summary, tags, body
    lengths: tuple[int, ...]  # terms per field, for length normalisation


class Notes(NamedTuple):
    """Notes as columns (what the cache stores beside the postings), slot ``n`` for row ``n``."""

    keys: list[NoteKey]
    cache_keys: list[CacheKey | None]
    lengths: npt.NDArray[np.int64]  # (notes, 3): terms per field


class TermOrder(NamedTuple):
    """Postings in term order: per term id how many, then each term's slots (ascending) and
    counts, term after term."""

    held: IntArray
    slots: IntArray
    counts: CountArray


class Rows:
    """A row of term ids per slot: a base's in one array (``ids``, each slot's from
    ``starts[slot]``), and rows set since."""

    def __init__(self, parts: list[tuple[IntArray, IntArray]], count: int) -> None:
        """The rows of slots ``0 .. count - 1`` from ``parts``: term ids and the slot of each,
        in the order of the row."""
        slots = np.concatenate([_NO_SLOTS, *(slots for _, slots in parts)])
        order = np.argsort(slots, kind="stable")
        self.ids = np.concatenate([_NO_SLOTS, *(ids for ids, _ in parts)])[order]
        self.starts = np.concatenate(([0], np.cumsum(np.bincount(slots, minlength=count))))
        self._set: dict[int, IntArray] = {}

    def __getitem__(self, slot: int) -> IntArray:
        row = self._set.get(slot)
        if row is None and slot + 1 < len(self.starts):
            row = self.ids[self.starts.item(slot) : self.starts.item(slot + 1)]
        return row if row is not None else _NO_SLOTS

    def __setitem__(self, slot: int, row: IntArray) -> None:
        self._set[slot] = row

    def gather(self, slots: IntArray) -> tuple[IntArray, IntArray]:
        """The rows of ``slots`` end to end, and per id the position of its slot in ``slots``
        (the base's rows read at once, rows set since one by one)."""
        positions = np.arange(len(slots), dtype=np.int32)
        in_base = slots < len(self.starts) - 1
        changed = [
            (n, self._set[slot]) for n, slot in enumerate(slots.tolist()) if slot in self._set
        ]
        in_base[[n for n, _ in changed]] = False
        starts = self.starts[slots[in_base]]
        lengths = self.starts[slots[in_base] + 1] - starts
        first = np.cumsum(lengths) - lengths  # where each row begins in the result
        ids = self.ids[np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()))]
        owner = np.repeat(positions[in_base], lengths)
        if changed:
            ids = np.concatenate([ids, *(row for _, row in changed)])
            owner = np.concatenate([owner, *(np.full(len(row), n, np.int32) for n, row in changed)])
        return ids, owner


class Postings:
    """Term postings and per-note rows; see the module docstring."""

    held: IntArray  # per term: notes holding it
    head_held: IntArray  # ... in their summary or tags
    _read: Read | None  # the base's postings from their file; None: from the arrays

    def __init__(self, short_body: int) -> None:
        self.short_body = short_body
        self.vocabulary = Vocabulary()
        self.keys: list[NoteKey | None] = []  # per slot; None: a dead slot
        self.slot_of: dict[NoteKey, int] = {}
        self.cache_keys: list[CacheKey | None] = []  # per slot
        self.lengths = np.zeros((0, FIELD_COUNT), dtype=np.float64)  # per slot
        self.totals = [0, 0, 0]
        self.version = 0  # moves on every change
        self._norms = (-1, np.zeros((0, FIELD_COUNT), dtype=np.float64))
        self._set_base(TermOrder(_NO_SLOTS, _NO_SLOTS, _NO_COUNTS))

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
            if self._read is not None and end > start:
                slots, counts = self._read(start, end)
            else:
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

    def slots_of_many(self, terms: list[str]) -> list[IntArray | None]:
        """The slots holding each term, None where no note does."""
        found: list[IntArray | None] = []
        for term_id in self.vocabulary.get_many(terms):
            slots = self.postings(term_id)[0] if term_id is not None else None
            found.append(slots if slots is not None and len(slots) else None)
        return found

    def slots_of_keys(self, keys: Collection[NoteKey | str]) -> list[int]:
        """Slots of the given notes; a bare id names that id in both scopes."""
        named: list[NoteKey] = []
        for key in keys:
            named += [("project", key), ("user", key)] if isinstance(key, str) else [key]
        return [self.slot_of[key] for key in named if key in self.slot_of]

    def entries_at(self, slots: list[int]) -> list[NoteEntry]:
        """The indexed form of the notes in ``slots``: a base note's gathered from the
        postings (one pass over them for all, a block at a time, read from the file when the
        base is there: none of it stays in the process)."""
        base = [slot for slot in slots if slot not in self._added_rows]
        wanted = np.zeros(len(self.keys), dtype=np.bool_)
        wanted[base] = True
        wheres: list[npt.NDArray[np.intp]] = [np.empty(0, dtype=np.intp)]
        owners, held = [_NO_SLOTS], [_NO_COUNTS]
        total = len(self._slots)
        for start in range(0, total, _BLOCK) if base else ():
            end = min(start + _BLOCK, total)
            if self._read is not None:
                block, counts = self._read(start, end)
            else:
                block, counts = self._slots[start:end], self._counts[start:end]
            at = np.flatnonzero(wanted[block])
            wheres.append(at + start)
            owners.append(block[at])
            held.append(counts[at])
        at, owner, all_counts = np.concatenate(wheres), np.concatenate(owners), np.concatenate(held)
        found: list[NoteEntry] = []
        for slot in slots:
            added = self._added_rows.get(slot)
            if added is not None:
                found.append(added)
                continue
            mine = owner == slot
            term_ids = np.searchsorted(self._starts, at[mine], side="right") - 1
            key = self.keys[slot]
            assert key is not None
            lengths = tuple(self.lengths[slot].astype(np.int64).tolist())
            entry = (key, self.cache_keys[slot], term_ids.astype(np.int32), all_counts[mine])
            found.append(NoteEntry(*entry, lengths))
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
        self.remove_many([entry.key])
        slot = len(self.keys)
        self.keys.append(entry.key)
        self.cache_keys.append(entry.cache_key)
        self.slot_of[entry.key] = slot
        if slot >= len(self.lengths):
            grown = np.zeros((max(16, 2 * slot), FIELD_COUNT), dtype=np.float64)
            grown[:slot] = self.lengths[:slot]
            self.lengths = grown
        self.lengths[slot] = entry.lengths
        in_head = (entry.frequencies[:, 0] > 0) | (entry.frequencies[:, 1] > 0)
        self.heads[slot] = entry.term_ids[in_head]
        if entry.lengths[2] <= self.short_body:
            self.bodies[slot] = entry.term_ids[~in_head & (entry.frequencies[:, 2] > 0)]
        self._added_rows[slot] = entry
        for term_id, counts in zip(
            entry.term_ids.tolist(), entry.frequencies.tolist(), strict=True
        ):
            self._added.setdefault(term_id, []).append((slot, *counts))
        self._count(entry, 1)
        self._changed_notes += 1
        self.version += 1
        self._maybe_rebuild()

    def remove_many(self, keys: Iterable[NoteKey]) -> int:
        """Remove notes (the postings read once for all); how many there were."""
        slots = [self.slot_of[key] for key in dict.fromkeys(keys) if key in self.slot_of]
        for slot, entry in zip(slots, self.entries_at(slots), strict=True):
            del self.slot_of[entry.key]
            self._count(entry, -1)
            if slot < self._base_notes:
                self._dead[slot] = True
                self._dead_count += 1
            else:
                del self._added_rows[slot]
                for term_id in entry.term_ids.tolist():
                    self._added[term_id] = [
                        item for item in self._added[term_id] if item[0] != slot
                    ]
            self.keys[slot] = self.cache_keys[slot] = None
            self.heads[slot] = self.bodies[slot] = _NO_SLOTS
            self.lengths[slot] = 0.0
            self._changed_notes += 1
        if slots:
            self.version += 1
            self._maybe_rebuild()
        return len(slots)

    def adopt(self, notes: Notes, order: TermOrder, read: Read | None = None) -> None:
        """Make the base of an empty index: ``notes`` in slots 0.. and their postings in term
        order, whose term ids are this vocabulary's; both kept as they are. ``read``: the
        same postings read from where they are stored, for a term's postings (``order`` is
        then read only to make the base, and when it is made again)."""
        self.keys, self.cache_keys = list(notes.keys), notes.cache_keys
        self.slot_of = dict(zip(notes.keys, range(len(notes.keys)), strict=True))
        self.lengths = notes.lengths.astype(np.float64)
        self.totals = [int(total) for total in notes.lengths.sum(axis=0)]
        self._set_base(order)
        self._read = read

    def term_order(self) -> tuple[Notes, TermOrder]:
        """Every note (slots renumbered from 0) and its postings in term order."""
        self._rebuild()
        keys = cast(list[NoteKey], self.keys)  # no dead slot after a rebuild
        notes = Notes(keys, self.cache_keys, self.lengths[: len(keys)].astype(np.int64))
        return notes, TermOrder(np.diff(self._starts).astype(np.int32), self._slots, self._counts)

    def _count(self, entry: NoteEntry, step: int) -> None:
        """Count a note's terms in (``step`` 1) or out (-1), as held and as per field."""
        self.held[entry.term_ids] += step
        in_head = (entry.frequencies[:, 0] > 0) | (entry.frequencies[:, 1] > 0)
        self.head_held[entry.term_ids[in_head]] += step
        for field, length in enumerate(entry.lengths):
            self.totals[field] += step * length

    def _set_base(self, order: TermOrder) -> None:
        """Make ``order`` the base of the notes in slots 0..: the number of notes holding each
        term, and the rows of each note's summary and tags terms and short body's, read off
        its postings block by block (no posting-sized temporary array)."""
        count, term_count = len(self.keys), len(self.vocabulary)
        self._starts = np.zeros(len(order.held) + 1, dtype=np.int64)
        np.cumsum(order.held, out=self._starts[1:])
        self._slots, self._counts = order.slots, order.counts
        self._read = None
        self._base_notes = count
        self._dead = np.zeros(count, dtype=np.bool_)  # per base slot
        self._added: dict[int, list[tuple[int, ...]]] = {}  # term -> (slot, *counts)
        self._added_rows: dict[int, NoteEntry] = {}  # per slot after the base
        self._changed_notes = self._dead_count = 0
        self.held = np.zeros(term_count, dtype=np.int32)
        self.held[: len(order.held)] = order.held
        short = self.lengths[:count, 2] <= self.short_body
        heads: list[tuple[IntArray, IntArray]] = []
        bodies: list[tuple[IntArray, IntArray]] = []
        for start in range(0, len(order.slots), _BLOCK):
            end = start + _BLOCK
            counts, slots = order.counts[start:end], order.slots[start:end]
            head = (counts[:, 0] > 0) | (counts[:, 1] > 0)
            body = ~head & (counts[:, 2] > 0) & short[slots]
            for rows, kept in ((heads, head), (bodies, body)):
                at = np.flatnonzero(kept)
                term_ids = np.searchsorted(self._starts, at + start, side="right") - 1
                rows.append((term_ids.astype(np.int32), slots[at]))
        self.heads, self.bodies = Rows(heads, count), Rows(bodies, count)
        self.head_held = np.bincount(self.heads.ids, minlength=term_count).astype(np.int32)
        self.version += 1

    def _maybe_rebuild(self) -> None:
        if self._changed_notes > max(_REBUILD_LEAST, self._base_notes // _REBUILD_SHARE):
            self._rebuild()

    def _rebuild(self) -> None:
        """Make the base again from every live posting, the live slots renumbered in order."""
        if not self._changed_notes and self._base_notes == len(self.keys):
            return
        live = np.array([key is not None for key in self.keys], dtype=np.bool_)
        renumber = (np.cumsum(live) - 1).astype(np.int32)
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
        held = np.bincount(ids, minlength=len(self.vocabulary)).astype(np.int32)
        kept = np.flatnonzero(live).tolist()
        keys = [key for key in self.keys if key is not None]
        self.keys, self.slot_of = list(keys), {key: slot for slot, key in enumerate(keys)}
        self.cache_keys = [self.cache_keys[slot] for slot in kept]
        self.lengths = self.lengths[kept].copy()
        self._set_base(TermOrder(held, slots[order], counts[order]))


def term_order(entries: Iterable[NoteEntry], vocabulary: Vocabulary) -> tuple[Notes, TermOrder]:
    """``entries`` as the notes of slots 0.., and their postings in term order (their term
    ids ``vocabulary``'s). Their postings are gathered a block of notes at a time, then placed
    term by term, block after block (as a stable sort by term would place them)."""
    keys: list[NoteKey] = []
    cache_keys: list[CacheKey | None] = []
    lengths: list[tuple[int, ...]] = []
    blocks: list[tuple[IntArray, CountArray, list[int]]] = []
    entries = iter(entries)
    while block := list(islice(entries, _BLOCK_NOTES)):
        keys += [entry.key for entry in block]
        cache_keys += [entry.cache_key for entry in block]
        lengths += [entry.lengths for entry in block]
        ids = np.concatenate([entry.term_ids for entry in block])
        counts = np.concatenate([entry.frequencies for entry in block])
        blocks.append((ids, counts, [len(entry.term_ids) for entry in block]))
    term_count = len(vocabulary)
    held = np.zeros(term_count, dtype=np.int64)
    for ids, _, _ in blocks:
        held += np.bincount(ids, minlength=term_count)
    place = np.cumsum(held) - held  # per term, where its next posting goes
    slots = np.empty(int(held.sum()), dtype=np.int32)
    counts = np.empty((len(slots), FIELD_COUNT), dtype=np.uint16)
    first = 0
    for ids, block_counts, sizes in blocks:
        owners = np.repeat(np.arange(first, first + len(sizes), dtype=np.int32), sizes)
        first += len(sizes)
        order = np.argsort(ids, kind="stable")
        ordered = ids[order]
        at = place[ordered] + np.arange(len(ordered)) - np.searchsorted(ordered, ordered)
        slots[at], counts[at] = owners[order], block_counts[order]
        place += np.bincount(ids, minlength=term_count)
    notes = Notes(keys, cache_keys, np.array(lengths, dtype=np.int64).reshape(-1, FIELD_COUNT))
    return notes, TermOrder(held.astype(np.int32), slots, counts)
