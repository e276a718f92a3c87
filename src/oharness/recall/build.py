"""The bulk build of the recall index: many notes' postings made together (spec 03.3).

:meth:`~oharness.recall.index.RecallIndex.add_many` hands every note to a :class:`Batch`,
which reads its chunks (body, tags, summary) and its marks (:func:`note_marks`, as for a note
added alone), then makes the notes' :class:`~.layout.Columns` - the note order and the term
order - in a few array operations over many notes at once, rather than a dictionary of counts
per field and note and a sort of every posting afterwards:

1. the distinct chunks, in order of first appearance, are analysed together (the tokeniser's
   memo, new plain words stemmed in bulk) and their terms given ids in that order, so a new
   term gets the id a build note by note gives it (the next one, at its first appearance in
   the body, tags, summary then marks of the first note holding it);
2. every chunk becomes its terms' ids (a look-up in C each; a stop word none, a compound or a
   word of several stems its several);
3. per block of notes, one sort of their postings by (term, note, position) finds each note's
   distinct terms, the notes holding each term in ascending order and where each first
   appears (the order the note's entry lists its terms in); the frequencies per field are
   counted with one ``bincount``;
4. the blocks' note orders are joined, and their term orders placed term by term.

Blocks keep every temporary array small (a few megabytes): numpy asks the kernel for huge
pages for larger ones, which on a machine with fragmented memory costs more in system time
than the work itself. The result is the entries
:meth:`~oharness.recall.postings.Postings.entry` makes one note at a time, to the last bit.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Collection, Iterable
from itertools import accumulate
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.notes.format import Note
from oharness.notes.links import extract_links
from oharness.recall.layout import (
    FIELD_COUNT,
    CacheKey,
    Columns,
    FreqArray,
    IntArray,
    NoteKey,
    TermOrder,
)
from oharness.recall.postings import Postings
from oharness.recall.surface import surface_marks
from oharness.recall.tokenize import LINK_MARK, PHRASE_MARK, Tokenizer
from oharness.types import Scope

Int64Array = npt.NDArray[np.int64]
#: The whole-tag marks of a note's tags, given its summary's terms (:class:`~.tags.TagMarks`).
TagMarks = Callable[[Iterable[str], Collection[str]], list[str]]

#: The mark term of a note that asks something: a question mark ending a sentence (not the
#: one of a URL), or a full-width one anywhere.
ASKS: Final = PHRASE_MARK + "?"
#: A body is indexed up to this many characters: every body within the spec's
#: ``memory.maxNoteBytes`` (131,072 bytes) whole. A file written by hand past it is read, kept
#: and shown as it is, but only its beginning is indexed, so one such file does not cost every
#: new process the time of tokenising it (the cache keeps only what is indexed).
INDEXED_BODY_CHARS: Final = 131_072
_QUESTION: Final = re.compile(r"？|\?(?=\s|$|[\"'”’)\]!.…])")

#: Marks (phrase, link, tag and surface terms) start with a character below this one; a chunk
#: never does (it starts with a word character), so a mark is its own single term.
_MARK_END: Final = "\x07"
#: The parts of a note in a batch, in the order its entry lists their terms (body, tags,
#: summary, marks), and the field of each (a mark's counts towards none).
_PARTS: Final = 4
_FIELD_OF_PART: Final = np.array([2, 1, 0, FIELD_COUNT], dtype=np.int64)
#: Chunks per block at most (a note is never split): the block's arrays stay under numpy's
#: huge-page size (4 MiB).
BLOCK_CHUNKS: Final = 1 << 18
#: The widest sort key packed in one integer: (term, note, position); a wider one is sorted
#: by (term, note) with a stable argsort instead.
PACKED_BITS: Final = 63


class _Chunks(NamedTuple):
    """The terms' ids of the distinct chunks and marks of a batch: a run of ``ids`` per
    chunk, ``sizes`` long, starting at ``starts``."""

    ids: Int64Array
    sizes: Int64Array
    starts: Int64Array


class _Block(NamedTuple):
    """The postings of a run of notes in note order (each note's terms where they first
    appear), with each note's counts and lengths, and where each posting of the term order
    (by term, then note) is in that order."""

    ids: IntArray
    frequencies: FreqArray
    counts: Int64Array
    lengths: Int64Array
    by_term: IntArray


class _Places(dict[str, int]):
    """Each key's place in the order keys were first asked for (a new key gets the next)."""

    def __missing__(self, key: str) -> int:
        place = self[key] = len(self)
        return place


class Batch:
    """The chunks of many notes, field by field, and their marks, gathered for one build.

    A chunk is held as its place among the distinct ones (the chunks' own strings are left
    to the collector as soon as a note is added, but for the first of each).
    """

    def __init__(self, tokenizer: Tokenizer, tag_marks: TagMarks) -> None:
        self.keys: list[NoteKey] = []
        self.cache_keys: list[CacheKey | None] = []
        self._tokenizer = tokenizer
        self._tag_marks = tag_marks
        self._place = _Places()  # each distinct chunk or mark, in order of first appearance
        self._items = array("q")  # per note: its body chunks, tag chunks, summary chunks, marks
        self._sizes: list[int] = []  # per note, how many of each

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, scope: Scope, note: Note, cache_key: CacheKey | None) -> None:
        """Add a note (its chunks and marks, as :meth:`RecallIndex.add` reads them)."""
        tokenizer = self._tokenizer
        body, links = without_links(note.body)
        words, phrases = tokenizer.message_terms(note.summary)  # its terms and phrases at once
        summary = {term for group in words for term in group}
        marks = note_marks(tokenizer, self._tag_marks, note, (body, links), (summary, phrases))
        self.keys.append((scope, note.id))
        self.cache_keys.append(cache_key)
        chunks = tokenizer.chunks
        parts = (chunks(body), chunks("\n".join(note.tags)), chunks(note.summary), marks)
        place = self._place.__getitem__  # a new chunk gets the next place (one look-up)
        extend = self._items.extend
        for part in parts:
            extend(map(place, part))
        self._sizes += map(len, parts)

    def columns(self, postings: Postings) -> Columns:
        """The notes' columns (both orders); their new terms are added to ``postings``'
        vocabulary in the order a build note by note adds them. Once: the batch is spent."""
        terms_of = _terms_of(self._tokenizer, list(self._place))
        sizes = np.fromiter(map(len, terms_of), np.int64, len(terms_of))
        chunks = _Chunks(
            _term_ids(postings, [term for terms in terms_of for term in terms]),
            sizes,
            np.cumsum(sizes) - sizes,
        )
        items = np.frombuffer(self._items, dtype=np.int64)
        per_note = [sum(self._sizes[n : n + _PARTS]) for n in range(0, len(self._sizes), _PARTS)]
        ends = list(accumulate(per_note, initial=0))
        blocks = [
            _block(chunks, items[ends[first] : ends[last]], self._sizes, (first, last))
            for first, last in _spans(per_note)
        ]
        del items  # the batch is spent: its chunks are let go before the columns are made
        self._place, self._items = _Places(), array("q")
        return _joined(self, blocks, len(postings.terms))


def without_links(body: str) -> tuple[str, tuple[str, ...]]:
    """The indexed part of ``body`` (its first :data:`INDEXED_BODY_CHARS`) with its links
    blanked out (a link names another note's topic, not this one's), and those links."""
    body = body[:INDEXED_BODY_CHARS]
    links = extract_links(body)
    for target in links:
        body = body.replace(f"[[{target}]]", " ")
    return body, links


def note_marks(
    tokenizer: Tokenizer,
    tag_marks: TagMarks,
    note: Note,
    body: tuple[str, tuple[str, ...]],
    summary: tuple[Collection[str], list[str]],
) -> list[str]:
    """The marks of a note: its summary's phrases, links, whole tags, derived summary and
    tags words, and whether it asks something. ``body``: the body without its links, and the
    links; ``summary``: the summary's terms and phrases."""
    text, links = body
    marks = [
        *summary[1],
        *(LINK_MARK + target for target in links),
        *tag_marks(note.tags, summary[0]),
        *surface_marks(tokenizer, note.summary + "\n" + "\n".join(note.tags)),
    ]
    if _QUESTION.search(note.summary) or _QUESTION.search(text):
        marks.append(ASKS)
    return marks


def _terms_of(tokenizer: Tokenizer, distinct: list[str]) -> list[tuple[str, ...]]:
    """The terms of each distinct chunk or mark."""
    chunks = [item for item in distinct if item >= _MARK_END]
    if len(chunks) == len(distinct):
        return tokenizer.chunk_terms(chunks)
    analysed = iter(tokenizer.chunk_terms(chunks))
    return [(item,) if item < _MARK_END else next(analysed) for item in distinct]


def _term_ids(postings: Postings, flat: list[str]) -> Int64Array:
    """The id of each term of ``flat``; the new ones added in order of first appearance."""
    vocabulary = postings.vocabulary
    found = list(map(vocabulary.get, flat))
    if None in found:
        new = list(
            dict.fromkeys(term for term, known in zip(flat, found, strict=True) if known is None)
        )
        known = len(postings.terms)
        vocabulary.update(zip(new, range(known, known + len(new)), strict=True))
        postings.terms.extend(new)
        found = list(map(vocabulary.__getitem__, flat))
    return np.array(found, dtype=np.int64)


def _spans(per_note: list[int]) -> list[tuple[int, int]]:
    """Runs of notes (first, last + 1) of at most :data:`BLOCK_CHUNKS` chunks each (or one
    note that has more)."""
    spans: list[tuple[int, int]] = []
    first, held = 0, 0
    for number, size in enumerate(per_note):
        if held and held + size > BLOCK_CHUNKS:
            spans.append((first, number))
            first, held = number, 0
        held += size
    if first < len(per_note) or not spans:
        spans.append((first, len(per_note)))
    return spans


def _runs(starts: Int64Array, lengths: Int64Array) -> Int64Array:
    """The indices ``start, start + 1, ..., start + length - 1`` of each run, concatenated."""
    ends = np.cumsum(lengths)
    shift = np.repeat(starts - (ends - lengths), lengths)
    shift += np.arange(len(shift), dtype=np.int64)
    return shift


def _block(chunks: _Chunks, place: Int64Array, sizes: list[int], span: tuple[int, int]) -> _Block:
    """The postings of the notes ``span`` (first, last + 1), whose chunks are at ``place``
    (``sizes``: the number of each part of every note of the batch)."""
    first, last = span
    note_count = last - first
    per_place = chunks.sizes[place]
    ids = chunks.ids[_runs(chunks.starts[place], per_place)]
    # The part (note and field) of each posting, from the terms each part holds.
    held = np.zeros(len(per_place) + 1, dtype=np.int64)
    np.cumsum(per_place, out=held[1:])
    part_ends = held[np.cumsum(sizes[first * _PARTS : last * _PARTS], dtype=np.int64)]
    part = np.repeat(np.arange(note_count * _PARTS), np.diff(part_ends, prepend=0))
    fields = _FIELD_OF_PART[part % _PARTS]
    notes = part // _PARTS
    lengths = np.bincount(notes * (FIELD_COUNT + 1) + fields, minlength=note_count * 4)
    starts, pair, position = _sorted_pairs(ids, notes, note_count)
    group = np.cumsum(starts) - 1
    distinct = int(group[-1]) + 1 if len(group) else 0
    counted = np.bincount(group * (FIELD_COUNT + 1) + fields[position], minlength=distinct * 4)
    frequencies = counted.reshape(distinct, FIELD_COUNT + 1)[:, :FIELD_COUNT].astype(np.float32)
    note_bits = _bits(note_count)
    held_pair = pair[starts]
    term_of = held_pair >> note_bits
    note_of = held_pair & ((1 << note_bits) - 1)
    # The note order: each (note, term) at the place it first appears in the note's parts.
    firsts = position[starts]
    flags = np.zeros(len(ids), dtype=np.bool_)
    flags[firsts] = True
    rank = np.cumsum(flags) - 1
    in_note_order = np.empty(distinct, dtype=np.int64)
    in_note_order[rank[firsts]] = np.arange(distinct, dtype=np.int64)
    return _Block(
        term_of[in_note_order].astype(np.int32),
        frequencies.take(in_note_order, axis=0),
        np.bincount(note_of, minlength=note_count),
        lengths.reshape(note_count, FIELD_COUNT + 1)[:, :FIELD_COUNT],
        rank[firsts].astype(np.int32),
    )


def _bits(count: int) -> int:
    return max(1, (count - 1).bit_length())


def _sorted_pairs(
    ids: Int64Array, notes: Int64Array, note_count: int
) -> tuple[npt.NDArray[np.bool_], Int64Array, Int64Array]:
    """The postings sorted by (term, note, position): whether each starts a new (term, note),
    its (term, note) packed as ``term << note bits | note``, and its position."""
    note_bits = _bits(note_count)
    count = len(ids)
    position_bits = _bits(count)
    pair = ids << note_bits
    pair |= notes
    widest = int(ids.max()) if count else 0
    if widest.bit_length() + note_bits + position_bits <= PACKED_BITS:
        key = pair << position_bits
        key |= np.arange(count, dtype=np.int64)
        key.sort()  # one sort of plain integers: several times faster than an argsort
        position = key & ((1 << position_bits) - 1)
        key >>= position_bits
        pair = key
    else:
        position = np.argsort(pair, kind="stable")
        pair = pair[position]
    starts = np.ones(count, dtype=np.bool_)
    if count:
        np.not_equal(pair[1:], pair[:-1], out=starts[1:])
    return starts, pair, position


def _joined(batch: Batch, blocks: list[_Block], term_count: int) -> Columns:
    """The columns of the batch from its blocks: their note orders joined, their term orders
    placed term by term (a term's slots from the earlier blocks first)."""
    ids = np.concatenate([block.ids for block in blocks])
    held = np.bincount(ids, minlength=term_count)
    filled = np.zeros(term_count, dtype=np.int64)
    np.cumsum(held[:-1], out=filled[1:])
    slots = np.empty(len(ids), dtype=np.int32)
    frequencies = np.empty((len(ids), FIELD_COUNT), dtype=np.float32)
    rows = _rows(frequencies)
    first = 0
    for block in blocks:
        order = block.by_term
        terms = block.ids[order]
        notes = np.repeat(np.arange(first, first + len(block.counts), dtype=np.int32), block.counts)
        first += len(block.counts)
        if not len(terms):
            continue
        run_starts = np.flatnonzero(np.diff(terms, prepend=-1))
        run_terms = terms[run_starts]
        run_lengths = np.diff(run_starts, append=len(terms))
        place = np.repeat(filled[run_terms] - run_starts, run_lengths)
        place += np.arange(len(terms), dtype=np.int64)
        filled[run_terms] += run_lengths
        slots[place] = notes[order]
        rows[place] = _rows(block.frequencies)[order]
    return Columns(
        list(batch.keys),
        list(batch.cache_keys),
        np.concatenate([block.lengths for block in blocks]).astype(np.int64),
        np.concatenate([block.counts for block in blocks]).astype(np.int64),
        ids,
        np.concatenate([block.frequencies for block in blocks]),
        TermOrder(held.astype(np.int32), slots, frequencies),
    )


def _rows(frequencies: FreqArray) -> npt.NDArray[np.void]:
    """The rows of a C-ordered ``(n, 3)`` array as ``n`` items (a gather or scatter of rows is
    then one-dimensional: several times faster)."""
    return np.ascontiguousarray(frequencies).view(np.dtype((np.void, 12))).reshape(-1)
