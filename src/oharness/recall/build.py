"""A note's indexed form: its terms counted per field, and its marks (spec 03.3).

The summary, tags and body are counted separately (:meth:`~.tokenize.Tokenizer.counts`); the
*marks* are terms held with no count in any field, looked up by the recall gate and search but
never scored: the summary's phrases, the notes it links to, its whole tags, its derived words
(:mod:`~oharness.recall.surface`) and whether it asks something. A new term gets the next id
in the order body, tags, summary, marks, so a bulk build and adds one by one number the terms
alike.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Final, NamedTuple

import numpy as np

from oharness.notes.links import extract_links
from oharness.recall.postings import CacheKey, NoteEntry, Postings
from oharness.recall.surface import surface_marks
from oharness.recall.tokenize import LINK_MARK, PHRASE_MARK, Tokenizer
from oharness.types import Scope

if TYPE_CHECKING:  # types only: a process that loads and recalls never reads a note
    from oharness.notes.format import Note

#: Marks a whole tag of a note, one word or two as a phrase term (``on-call``): said whole in a
#: message, it names the note's topic (the gate, :mod:`~oharness.recall.judge`, looks it up).
TAG_MARK: Final = "\x03"
#: Marks again a whole tag with a word the note's summary does not use (a synonym, the term in
#: another language, a name).
UNUSED_TAG_MARK: Final = "\x04"
#: Distinct tags whose marks are kept at most.
_TAGS_KEPT: Final = 20_000
#: The mark term of a note that asks something: a question mark ending a sentence (not the
#: one of a URL), or a full-width one anywhere.
ASKS: Final = PHRASE_MARK + "?"
#: A body is indexed up to this many characters: every body within the spec's
#: ``memory.maxNoteBytes`` (131,072 bytes) whole. A file written by hand past it is read, kept
#: and shown as it is, but only its beginning is indexed, so one such file does not cost every
#: new process the time of tokenising it.
INDEXED_BODY_CHARS: Final = 131_072
_QUESTION: Final = re.compile(r"？|\?(?=\s|$|[\"'”’)\]!.…])")
_MAX_COUNT: Final = 65_535  # a body of maxNoteBytes has fewer words


def note_entry(
    postings: Postings,
    tokenizer: Tokenizer,
    tag_marks: TagMarks,
    key: tuple[Scope, Note],
    cache_key: CacheKey | None,
) -> NoteEntry:
    """The indexed form of a note, its new terms added to the ``postings``' vocabulary."""
    scope, note = key
    body = note.body[:INDEXED_BODY_CHARS]
    links = extract_links(body)
    for target in links:  # blanked out: a link names another note's topic, not this one's
        body = body.replace(f"[[{target}]]", " ")
    count = tokenizer.counts
    summary, tags, text = count(note.summary), count("\n".join(note.tags)), count(body)
    marks = [  # the summary's phrases, links, whole tags, derived words, whether it asks
        *tokenizer.phrases(note.summary),
        *(LINK_MARK + target for target in links),
        *tag_marks(note.tags, summary),
        *surface_marks(tokenizer, note.summary + "\n" + "\n".join(note.tags)),
    ]
    if _QUESTION.search(note.summary) or _QUESTION.search(body):
        marks.append(ASKS)
    union = dict.fromkeys([*text, *tags, *summary, *marks])
    term_ids = postings.term_ids(union)
    counts = np.zeros((len(union), 3), dtype=np.int64)
    for field, counted in enumerate((summary, tags, text)):
        if counted:
            counts[:, field] = [counted.get(term, 0) for term in union]
    order = np.argsort(term_ids, kind="stable")
    lengths = (sum(summary.values()), sum(tags.values()), sum(text.values()))
    frequencies = counts[order].clip(0, _MAX_COUNT).astype(np.uint16)
    return NoteEntry((scope, note.id), cache_key, term_ids[order], frequencies, lengths)


class WholeTag(NamedTuple):
    """A tag as the gate names it: its word or phrase term, and the last term of each word."""

    term: str
    last_terms: tuple[str, ...]


class TagMarks:
    """The marks of notes' tags, each distinct tag read once (tags recur across notes)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._tags: dict[str, WholeTag | None] = {}

    def __call__(self, tags: Iterable[str], summary: Collection[str]) -> list[str]:
        """The marks of a note's whole tags of one or two words (:data:`TAG_MARK`), and again
        (:data:`UNUSED_TAG_MARK`) of those with a word the ``summary`` terms do not hold."""
        marks: list[str] = []
        known = self._tags
        for tag in tags:
            if tag not in known:
                if len(known) >= _TAGS_KEPT:
                    known.clear()
                known[tag] = self._read(tag)
            whole = known[tag]
            if whole is None:
                continue
            marks.append(TAG_MARK + whole.term)
            if any(last not in summary for last in whole.last_terms):
                marks.append(UNUSED_TAG_MARK + whole.term)
        return marks

    def _read(self, tag: str) -> WholeTag | None:
        """A tag's word or phrase term, and the last term of each of its words; None for a tag
        that marks nothing (no word, more than two, or two that pair into no phrase)."""
        words = self._tokenizer.query_terms(tag)
        if len(words) == 1:
            term = words[0][0]
        elif len(words) <= 3:  # two words (or a compound kept whole, then its two)
            phrases = self._tokenizer.phrases(tag)
            if not phrases:
                return None
            term = phrases[-1]
        else:
            return None
        return WholeTag(term, tuple(group[-1] for group in words))
