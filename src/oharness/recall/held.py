"""What the recall gate looks up for each term of a message, kept until the notes change.

For each word and phrase of a message the gate asks the postings a word's id, the notes whose
summary holds a phrase, the notes holding the word or phrase as a whole tag, and those of them
whose summary does not use the tag. Most of these terms are held by no
note, and the vocabulary is large (every term and phrase of every note), so each look-up is a
walk through memory that no cache keeps warm. Messages repeat words: the answers are kept per
term (:class:`HeldTable`) until the postings' version moves - a note added, replaced or
removed - and at most :data:`HELD_KEPT` of them. The slots of a term the base holds unchanged
are views of the base's term-order slots (no gather, no copy).
"""

from __future__ import annotations

from typing import Final, NamedTuple, cast

from oharness.recall.postings import IntArray, Postings
from oharness.recall.tokenize import PHRASE_MARK

#: Terms whose answers a table keeps at most before it starts afresh.
HELD_KEPT: Final = 200_000


class Held(NamedTuple):
    """What the postings hold of one term (None: no note)."""

    term_id: int | None  # a word's (None for a phrase)
    slots: IntArray | None  # a phrase's: the notes whose summary holds it
    tag: IntArray | None  # the notes holding it as a whole tag
    unused: IntArray | None  # those of them whose summary does not use the tag


_NOTHING: Final = Held(None, None, None, None)


class HeldTable:
    """:class:`Held` per term for one version of the postings.

    ``tag_mark`` and ``unused_mark`` prefix a term to name it as a whole tag and as a whole
    tag the summary does not use (see :mod:`~oharness.recall.judge`).
    """

    def __init__(self, postings: Postings, tag_mark: str, unused_mark: str) -> None:
        self._postings = postings
        self._tag_mark = tag_mark
        self._unused_mark = unused_mark
        self.reset()

    def reset(self) -> None:
        """Forget every answer (term ids may have been renumbered)."""
        self._version = -1
        self._terms: dict[str, Held] = {}

    def get_many(self, terms: list[str]) -> list[Held]:
        """What the postings hold of each of ``terms``."""
        if self._version != self._postings.version or len(self._terms) > HELD_KEPT:
            self._terms, self._version = {}, self._postings.version
        found = list(map(self._terms.get, terms))
        if None in found:
            self._fill(terms, found)
        return cast(list[Held], found)  # no None left

    def _fill(self, terms: list[str], found: list[Held | None]) -> None:
        """Look up the terms of ``found`` not known yet (in place): one dictionary look-up or
        two for a term no note holds as a phrase or tag (most), then the slots of the rest.
        """
        known = self._terms
        get = self._postings.vocabulary.get
        tag_mark, unused_mark = self._tag_mark, self._unused_mark
        # A term some note holds as a phrase or tag, with the ids of those terms to read.
        held: list[tuple[str, int | None, int | None, int | None, int | None]] = []
        pending: list[int] = []  # their positions
        for position, term in enumerate(terms):
            if found[position] is not None:
                continue
            tag_id = get(tag_mark + term)
            if term[:1] == PHRASE_MARK:  # a phrase: the notes whose summary holds it
                term_id, phrase_id = None, get(term)
            else:  # a word: its id (its notes are in the term tables)
                term_id, phrase_id = get(term), None
            if phrase_id is None and tag_id is None:
                found[position] = known[term] = (
                    _NOTHING if term_id is None else Held(term_id, None, None, None)
                )
            else:
                unused_id = get(unused_mark + term) if tag_id is not None else None
                held.append((term, term_id, phrase_id, tag_id, unused_id))
                pending.append(position)
        if held:
            self._read(held)
            for position in pending:
                found[position] = known[terms[position]]

    def _read(self, held: list[tuple[str, int | None, int | None, int | None, int | None]]) -> None:
        """Keep the :class:`Held` of each (term, its id, phrase, tag and unused tag ids)."""
        ids = [term_id for _, _, *marks in held for term_id in marks if term_id is not None]
        slots = iter(self._postings.slots_of_ids(ids))
        known = self._terms
        for term, term_id, phrase_id, tag_id, unused_id in held:
            phrase = next(slots) if phrase_id is not None else None
            tag = next(slots) if tag_id is not None else None
            unused = next(slots) if unused_id is not None else None
            if phrase is None and tag is None:  # the notes holding them are gone
                known[term] = _NOTHING if term_id is None else Held(term_id, None, None, None)
            else:
                known[term] = Held(term_id, phrase, tag, unused if tag is not None else None)
