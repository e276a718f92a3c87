"""A note's whole tags as mark terms, for the recall gate (spec 03.2).

A tag of one word, or of two (a phrase term, ``on-call``), said whole in a message names the
note's topic: the gate (:mod:`~oharness.recall.judge`) looks up :data:`TAG_MARK` plus the
word or phrase, and :data:`UNUSED_TAG_MARK` plus it for a tag with a word the note's summary
does not use (a synonym, the term in another language, a name). :class:`TagMarks` makes a
note's marks when it is indexed, alone or in a bulk build.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Final

from oharness.recall.tokenize import Tokenizer

#: Marks a whole tag of a note: one word, or two as a phrase term (``on-call``).
TAG_MARK: Final = "\x03"
#: Marks again a whole tag with a word the note's summary does not use.
UNUSED_TAG_MARK: Final = "\x04"
#: A whole tag's marks (:data:`TAG_MARK`, :data:`UNUSED_TAG_MARK`) and its words' last terms.
_ReadTag = tuple[str, str, tuple[str, ...]]
_UNREAD: Final[_ReadTag] = ("", "", ())
#: Distinct tags whose marks are kept at most.
_TAGS_KEPT: Final = 20_000


class TagMarks:
    """The marks of notes' tags, each distinct tag read once (tags recur across notes)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._tags: dict[str, _ReadTag | None] = {}

    def __call__(self, tags: Iterable[str], summary: Collection[str]) -> list[str]:
        """The marks of a note's whole tags of one or two words (:data:`TAG_MARK`), and again
        (:data:`UNUSED_TAG_MARK`) of those with a word the ``summary`` terms do not hold."""
        marks: list[str] = []
        known = self._tags
        for tag in tags:
            read = known.get(tag, _UNREAD)
            if read is _UNREAD:
                if len(known) >= _TAGS_KEPT:
                    known.clear()
                read = known[tag] = self._read(tag)
            if read is None:
                continue
            mark, unused, last_terms = read
            marks.append(mark)
            if any(term not in summary for term in last_terms):
                marks.append(unused)
        return marks

    def _read(self, tag: str) -> _ReadTag | None:
        """A tag's two marks and the last term of each of its words; None for a tag that
        marks nothing (no word, more than two, or two that pair into no phrase)."""
        words = self._tokenizer.query_terms(tag)
        if len(words) == 1:
            mark = words[0][0]
        elif len(words) <= 3:  # two words (or a compound kept whole, then its two)
            phrases = self._tokenizer.phrases(tag)
            if not phrases:
                return None
            mark = phrases[-1]
        else:
            return None
        return TAG_MARK + mark, UNUSED_TAG_MARK + mark, tuple(group[-1] for group in words)
