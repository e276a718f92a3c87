"""The per-message recall gate over an index (spec 03.2): which candidates the message names.

:class:`Judge` holds what the gate needs beside the postings - the per-slot topic weights
(:mod:`~oharness.recall.topic`), the priors and scripts of terms by id, the word tables of
:mod:`~oharness.recall.related` - and applies :mod:`~oharness.recall.gate` to the candidates
of one message:

- frame words are left out of the message; related words are looked up beside its words, at
  :data:`~oharness.recall.related.RELATED_FACTOR` of their weight;
- a message is measured against the part of a note's topic in its own scripts: an English
  message against the words, a Japanese one against the pairs (:mod:`~.topic`);
- a phrase of the summary, or a whole tag the summary does not use (a synonym, the term in
  another language, a name), said in the message names the topic
  (:data:`~oharness.recall.gate.PHRASE_OVERLAP_GATE`);
- a short note that fails on its summary and tags is judged again with its body words;
- everyday words alone that pass on ``per_turn`` notes or more single none of them out: in
  a large folder a couple of everyday words ("review the changes in this file") meet many
  summaries, and attaching three of them is noise.

Not thread-safe, as the index that owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from oharness.recall import gate
from oharness.recall.accumulate import TermTable
from oharness.recall.held import HeldTable
from oharness.recall.postings import IntArray, NoteEntry, Postings
from oharness.recall.related import FRAME_WORDS, RELATED_FACTOR, related_terms
from oharness.recall.score import MIN_TERM_WEIGHT, ScoringParams
from oharness.recall.tokenize import Tokenizer, unspaced_term
from oharness.recall.topic import TopicWeights

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
SlotArray = npt.NDArray[np.integer[Any]]
Groups = list[tuple[str, ...]]
#: Per message word with related words (by its position), their terms.
Related = list[tuple[int, tuple[str, ...]]]
#: Marks a whole tag of a note: one word, or two as a phrase term (``on-call``).
TAG_MARK: Final = "\x03"
#: Marks again a whole tag with a word the note's summary does not use.
UNUSED_TAG_MARK: Final = "\x04"
#: Short notes whose body-only terms are kept at most (a few kilobytes each).
BODIES_KEPT: Final = 2_000


@dataclass
class Message:
    """One message as the gate reads it."""

    groups: Groups  # its words, each as its alternative terms (frame words left out)
    phrases: list[str]  # its phrase terms
    related: Related  # related words of its words, not said
    weights: dict[str, float] = field(default_factory=dict)  # topic weight of terms found
    strongest: FloatArray = field(default_factory=lambda: np.zeros(0))  # per slot
    named: BoolArray | None = None  # per slot: a phrase of the summary is in the message


class Judge:
    """The gate's state over one index; see the module docstring."""

    def __init__(
        self,
        postings: Postings,
        tokenizer: Tokenizer,
        params: ScoringParams,
        table: TermTable,
        weigh: Callable[[str, int], float],
    ) -> None:
        self._postings = postings
        self._tokenizer = tokenizer
        self._table = table
        self._weight = weigh
        self._topics = TopicWeights(params, gate.SHORT_BODY, self._unspaced_of)
        english = {"english", "porter"} & set(tokenizer.languages)
        self._related = related_terms(tokenizer.tokens) if english else {}
        self._frame = frozenset(
            term for word in (FRAME_WORDS if english else ()) for term in tokenizer.tokens(word)
        )
        self._held = HeldTable(postings, TAG_MARK, UNUSED_TAG_MARK)
        self.reset()

    def reset(self) -> None:
        """Forget what is kept by term id (term ids may have been renumbered)."""
        self._topics.reset()
        self._held.reset()
        self._priors: FloatArray = np.empty(0, dtype=np.float64)  # NaN: unknown
        self._unspaced: npt.NDArray[np.int8] = np.empty(0, dtype=np.int8)  # -1: unknown
        #: Per slot judged as a short note: its entry and its body-only term ids.
        self._bodies: dict[int, tuple[NoteEntry | None, frozenset[int]]] = {}

    def message(self, text: str) -> Message:
        """``text`` as the gate reads it."""
        groups, phrases = self._tokenizer.message_terms(text)
        if self._frame:
            groups = [group for group in groups if not self._frame.issuperset(group)]
        return Message(groups, phrases, self._related_of(groups))

    def scored_groups(self, message: Message) -> list[tuple[tuple[str, ...], float]]:
        """The message's words and related words, weighted, for the scorer."""
        return [(group, 1.0) for group in message.groups] + [
            ((term,), RELATED_FACTOR) for _, terms in message.related for term in terms
        ]

    def judge(
        self,
        message: Message,
        slots: SlotArray,
        scored: tuple[FloatArray, FloatArray],
        per_turn: int,
    ) -> tuple[SlotArray, FloatArray]:
        """The ``slots`` whose notes the message names, and per slot how many of a note's
        whole tags it says (for ranking: :data:`~.gate.TAG_RANK`).

        ``scored``: the scores and shared weights per slot. Every candidate is judged on its
        summary and tags at once; a short note that fails is judged again with its body words
        (:meth:`_judge_short`). Everyday words alone that pass on ``per_turn`` notes or more
        single none of them out.
        """
        scores, shared = scored
        size = len(scores)
        tags, tag_only_all = self._tag_counts(message.groups, message.phrases, size)
        if not len(slots):
            return slots, tags
        groups = message.groups
        phrase_all = message.named = self.phrase_slots(message.phrases, size)
        postings = self._postings
        said = self._message_weight(message)
        topic, body = self._topic_of(groups, slots)
        strongest = message.strongest[slots]  # a copy (indexed by an array)
        phrase, tag_only = phrase_all[slots], tag_only_all[slots]
        ok = gate.passes_many(shared[slots], topic, said, phrase | tag_only, strongest)
        retry = np.flatnonzero(~ok & (postings.body_lengths()[slots] <= gate.SHORT_BODY))
        if len(retry):
            limit = gate.SHORT_CANDIDATES
            if len(retry) > limit:
                retry = retry[np.argpartition(-scores[slots[retry]], limit - 1)[:limit]]
            verdicts = self._judge_short(
                message,
                slots[retry],
                (shared, topic[retry] + body[slots[retry]], said),
                (phrase[retry], tag_only[retry]),
            )
            for position, (passed, extra_strongest) in zip(retry.tolist(), verdicts, strict=True):
                ok[position] = passed
                strongest[position] = max(float(strongest[position]), extra_strongest)
        everyday = ok & ~phrase & ~tag_only & (strongest < gate.DISTINCTIVE)
        if np.count_nonzero(everyday) >= per_turn:
            ok &= ~everyday
        return slots[ok], tags

    def _topic_of(self, groups: Groups, slots: SlotArray) -> tuple[FloatArray, FloatArray]:
        """Per note of ``slots``, the weight of its topic in the message's scripts (an English
        message is measured against the words, a Japanese one against the pairs, a mixed one
        against both), and per slot the weight of a short note's other body words."""
        postings = self._postings
        head, pairs, body = self._topics.arrays(
            postings.entries_by_slot(),
            postings.version,
            len(postings),
            self._priors_of,
            postings.document_frequencies,
            self._topic_frequencies,
        )
        unspaced = [not group[0].isascii() and unspaced_term(group[0]) for group in groups]
        topic = np.zeros(len(slots), dtype=np.float64)
        if not all(unspaced):
            topic += head[slots]
        if any(unspaced):
            topic += pairs[slots]
        return topic, body

    def _judge_short(
        self,
        message: Message,
        slots: SlotArray,
        weights: tuple[FloatArray, FloatArray, float],
        named: tuple[BoolArray, BoolArray],
    ) -> list[tuple[bool, float]]:
        """Short notes judged with their body words beside their summary and tags: per slot,
        the verdict and the strongest body word matched. ``weights``: ``shared`` per slot,
        the topic with the body per note of ``slots``, ``said``; ``named`` as for
        :meth:`judge` (a phrase, a tag the summary does not use), per note of ``slots``.

        A phrase of the summary counts as before; a tag the summary does not use counts as
        one only with :data:`~.gate.NAMED_BODY_WORDS` body words matched beside it (the tag
        names whom or what, the body words what about it).
        """
        shared, topic, said = weights
        extras, strongests, counts = self._body_matches(message, slots)
        verdicts: list[tuple[bool, float]] = []
        for number, slot in enumerate(slots.tolist()):
            extra, extra_strongest = float(extras[number]), float(strongests[number])
            words = int(counts[number])
            if extra <= 0:  # no body word matched: the same words against a larger topic
                verdicts.append((False, 0.0))
                continue
            phrase = bool(named[0][number]) or (
                bool(named[1][number]) and words >= gate.NAMED_BODY_WORDS
            )
            strongest = max(float(message.strongest[slot]), extra_strongest)
            passed = gate.passes(
                float(shared[slot]) + extra,
                float(topic[number]),
                said,
                phrase=phrase,
                strongest=strongest,
            )
            verdicts.append((passed, extra_strongest))
        return verdicts

    def tag_marks(self, tags: Iterable[str], summary: Collection[str]) -> list[str]:
        """The marks of a note's whole tags of one or two words (:data:`TAG_MARK`), and again
        (:data:`UNUSED_TAG_MARK`) of those with a word the ``summary`` terms do not hold."""
        marks: list[str] = []
        for tag in tags:
            words = self._tokenizer.query_terms(tag)
            if len(words) == 1:
                mark = words[0][0]
            elif len(words) <= 3:  # two words (or a compound kept whole, then its two)
                phrases = self._tokenizer.phrases(tag)
                if not phrases:
                    continue
                mark = phrases[-1]
            else:
                continue
            marks.append(TAG_MARK + mark)
            if any(group[-1] not in summary for group in words):
                marks.append(UNUSED_TAG_MARK + mark)
        return marks

    def _tag_counts(
        self, groups: Groups, phrases: list[str], size: int
    ) -> tuple[FloatArray, BoolArray]:
        """Per slot, how many of the note's whole tags the message says, and whether one of
        them has a word the note's summary does not use (a synonym, another language, a
        name)."""
        named: list[IntArray] = []
        unused: list[IntArray] = []
        for held in self._held.get_many([group[0] for group in groups] + phrases):
            if held.tag is not None:
                named.append(held.tag)
                if held.unused is not None:
                    unused.append(held.unused)
        tag_only = np.zeros(size, dtype=np.bool_)
        if not named:
            return np.zeros(size, dtype=np.float64), tag_only
        # Each tag's notes are distinct, so counting slots counts the tags said per note.
        counts = np.bincount(np.concatenate(named), minlength=size).astype(np.float64)
        if unused:
            tag_only[np.concatenate(unused)] = True
        return counts, tag_only

    def phrase_slots(self, phrases: list[str], size: int) -> npt.NDArray[np.bool_]:
        """Per slot, whether the note's summary holds one of the message's phrases."""
        found = np.zeros(size, dtype=np.bool_)
        held = [held.slots for held in self._held.get_many(phrases) if held.slots is not None]
        if held:
            found[np.concatenate(held)] = True
        return found

    def _related_of(self, groups: Groups) -> Related:
        """Per message word with related words (:mod:`~.related`), their terms not said."""
        said = {term for group in groups for term in group}
        if not self._related or said.isdisjoint(self._related):
            return []
        found: Related = []
        for number, group in enumerate(groups):
            terms = {t for term in group for t in self._related.get(term, ()) if t not in said}
            if terms:
                found.append((number, tuple(sorted(terms))))
        return found

    def add_related(self, message: Message, shared: FloatArray) -> None:
        """Add to ``shared`` the weight of related words found in summaries or tags, at
        :data:`~.related.RELATED_FACTOR`, where the message word itself is not found."""
        table = self._table
        for number, terms in message.related:
            best = np.zeros(len(shared), dtype=np.float64)
            for part in table.get_many(list(terms)):
                if part is not None and part.weight > 0:
                    value = RELATED_FACTOR * part.topic_weight
                    best[part.head] = np.maximum(best[part.head], value)
            for part in table.get_many(list(message.groups[number])):
                if part is not None:
                    best[part.head] = 0.0
            shared += best

    def _priors_of(self, term_ids: IntArray) -> FloatArray:
        """The tokeniser's priors of terms by id, remembered per term (a prior never changes)."""
        postings = self._postings
        priors = self._priors
        if len(priors) < len(postings.terms):
            grown = np.full(max(len(postings.terms), 2 * len(priors)), np.nan, dtype=np.float64)
            grown[: len(priors)] = priors
            self._priors = priors = grown
        values = priors[term_ids]
        unknown = np.isnan(values)
        if unknown.any():
            new = _distinct_ids(term_ids[unknown], len(priors))
            terms = postings.terms
            priors[new] = self._tokenizer.priors([terms[term_id] for term_id in new.tolist()])
            values = priors[term_ids]
        return values

    def _unspaced_of(self, term_ids: IntArray) -> npt.NDArray[np.bool_]:
        """Whether each term (by id) is of a script written without spaces, remembered."""
        postings = self._postings
        known = self._unspaced
        if len(known) < len(postings.terms):
            grown = np.full(max(len(postings.terms), 2 * len(known)), -1, dtype=np.int8)
            grown[: len(known)] = known
            self._unspaced = known = grown
        values = known[term_ids]
        if (values < 0).any():
            new = _distinct_ids(term_ids[values < 0], len(known))
            terms = postings.terms
            known[new] = [
                not terms[term_id].isascii() and unspaced_term(terms[term_id])
                for term_id in new.tolist()
            ]
            values = known[term_ids]
        result: npt.NDArray[np.bool_] = values > 0
        return result

    def _topic_frequencies(self, term_ids: IntArray) -> IntArray:
        """How many notes hold each term in their summary or tags."""
        postings = self._postings
        counts = np.zeros(len(term_ids), dtype=np.int32)
        for number, term_id in enumerate(term_ids.tolist()):
            found = postings.lookup(postings.terms[term_id])
            if found is not None:
                frequencies = found[1]
                counts[number] = int(np.count_nonzero(frequencies[:, 0] + frequencies[:, 1]))
        return counts

    def _body_matches(
        self, message: Message, slots: SlotArray
    ) -> tuple[list[float], list[float], list[int]]:
        """Per note of ``slots`` (short notes): the weight of the message words found in its
        body but not its summary or tags, the strongest of them and how many (each word's
        best stem), summed in the order the note holds them."""
        count = len(slots)
        extra, strongest, words = [0.0] * count, [0.0] * count, [0] * count
        terms = [term for group in message.groups for term in group]
        numbers = [number for number, group in enumerate(message.groups) for _ in group]
        word_of: dict[int, tuple[int, float]] = {}  # term id -> its word, its weight
        parts = self._table.get_many(terms)
        for number, part, known in zip(numbers, parts, self._held.get_many(terms), strict=True):
            if part is not None and part.weight >= MIN_TERM_WEIGHT:  # else it names nothing
                assert known.term_id is not None  # a note holds the term
                word_of[known.term_id] = (number, part.weight)
        said = set(word_of)
        if not said:
            return extra, strongest, words
        by_slot = self._postings.entries_by_slot()
        for position, slot in enumerate(slots.tolist()):
            entry = by_slot[slot]
            found = said.intersection(self._body_terms(slot, entry))
            if not found:
                continue
            # Two weights add up the same in any order; more are summed in the note's order.
            hits: Collection[int] = found
            if len(found) > 2 and entry is not None:
                hits = [term_id for term_id in entry.term_ids.tolist() if term_id in found]
            best: dict[int, float] = {}  # word -> its best stem's weight
            for term_id in hits:
                number, weight = word_of[term_id]
                best[number] = max(best.get(number, 0.0), weight)
            for weight in best.values():
                extra[position] += weight
                strongest[position] = max(strongest[position], weight)
                words[position] += 1
        return extra, strongest, words

    def _body_terms(self, slot: int, entry: NoteEntry | None) -> frozenset[int]:
        """The ids of the terms a note holds in its body but not its summary or tags,
        remembered per entry (a replaced note has a new one), for :data:`BODIES_KEPT` notes."""
        kept = self._bodies.get(slot)
        if kept is not None and kept[0] is entry:
            return kept[1]
        body: frozenset[int] = frozenset()
        if entry is not None:
            frequencies = entry.frequencies
            only = (frequencies[:, 2] > 0) & (frequencies[:, 0] + frequencies[:, 1] == 0)
            body = frozenset(entry.term_ids[only].tolist())
        if len(self._bodies) >= BODIES_KEPT:
            self._bodies.clear()
        self._bodies[slot] = (entry, body)
        return body

    def _message_weight(self, message: Message) -> float:
        """The recall weight of a message's words (each word's best stem)."""
        known = message.weights  # what the scorer found for this message
        total = 0.0
        for group in message.groups:
            if len(group) == 1:  # most words (a weight is never below 0)
                weight = known.get(group[0])
                total += weight if weight is not None else self._weight(group[0], 0)
                continue
            best = 0.0
            for term in group:
                weight = known.get(term)
                if weight is None:  # no note holds the term
                    weight = self._weight(term, 0)
                best = max(best, weight)
            total += best
        return total


def _distinct_ids(term_ids: IntArray, size: int) -> IntArray:
    """The distinct ids of ``term_ids`` (each below ``size``), ascending: ``np.unique`` through
    a mark per id, several times cheaper on the many ids of a whole folder."""
    marked = np.zeros(size, dtype=np.bool_)
    marked[term_ids] = True
    distinct: IntArray = np.flatnonzero(marked).astype(np.int32)
    return distinct
