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

Before any tag, phrase or body is read, the notes that cannot pass are left out
(:meth:`Judge.candidates`, :mod:`~oharness.recall.candidates`), and a short note's body is
read only when its score allows its body words to make up what it lacks.

Not thread-safe, as the index that owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from oharness.recall import gate
from oharness.recall.accumulate import Scored, TermTable
from oharness.recall.candidates import Candidates, positions
from oharness.recall.held import Held, HeldTable
from oharness.recall.postings import IntArray, NoteEntry, Postings
from oharness.recall.related import FRAME_WORDS, RELATED_FACTOR, related_terms
from oharness.recall.score import MIN_TERM_WEIGHT, ScoringParams
from oharness.recall.tags import TAG_MARK, UNUSED_TAG_MARK
from oharness.recall.tokenize import Tokenizer, unspaced_term
from oharness.recall.topic import TopicWeights

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
SlotArray = npt.NDArray[np.integer[Any]]
Positions = npt.NDArray[np.intp]  # of candidates
Groups = list[tuple[str, ...]]
#: Per message word with related words (by its position), their terms.
Related = list[tuple[int, tuple[str, ...]]]
#: Short notes whose body-only terms are kept at most (a few kilobytes each).
BODIES_KEPT: Final = 2_000
#: Relative slack of a bound computed in another order than the sum it bounds.
_ROUNDING: Final = 1e-9
_TINY: Final = 1e-300
#: The strongest word matters to the gate only from this weight on (a distinctive or rare
#: word; see :func:`~.gate.passes`), and to the stem-only rule, which finds it again.
_STRONG: Final = min(gate.DISTINCTIVE, gate.RARE)
_NO_POSITIONS: Final[Positions] = np.empty(0, dtype=np.intp)


@dataclass
class Message:
    """One message as the gate reads it."""

    groups: Groups  # its words, each as its alternative terms (frame words left out)
    phrases: list[str]  # its phrase terms
    related: Related  # related words of its words, not said
    weights: dict[str, float] = field(default_factory=dict)  # topic weight of terms found
    named: frozenset[int] = frozenset()  # the slots judged whose summary holds a phrase of it


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
        self._params = params
        self._topics = TopicWeights(params, gate.SHORT_BODY, self._unspaced_of)
        english = {"english", "porter"} & set(tokenizer.languages)
        self._related = related_terms(tokenizer.tokens) if english else {}
        self._related_keys = frozenset(self._related)
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
        #: Per slot judged as a short note: its stamp and its body-only term ids.
        self._bodies: dict[int, tuple[int, tuple[int, ...]]] = {}
        self._bounds: tuple[int, FloatArray] = (-1, np.empty(0))  # see _body_bounds

    def message(self, text: str) -> Message:
        """``text`` as the gate reads it."""
        groups, phrases = self._tokenizer.message_terms(text)
        said = set(chain.from_iterable(groups))
        if not self._frame.isdisjoint(said):
            groups = [group for group in groups if not self._frame.issuperset(group)]
            said = set(chain.from_iterable(groups))
        return Message(groups, phrases, self._related_of(groups, said))

    def scored_groups(self, message: Message) -> list[tuple[tuple[str, ...], float]]:
        """The message's words and related words, weighted, for the scorer."""
        return [(group, 1.0) for group in message.groups] + [
            ((term,), RELATED_FACTOR) for _, terms in message.related for term in terms
        ]

    def candidates(
        self, message: Message, scored: Scored, slots: SlotArray, short: BoolArray
    ) -> Candidates | None:
        """The notes of ``slots`` (ascending; ``short``: per slot whether the note's body is
        short) the gate must judge, with what it knows of each before reading their tags,
        phrases and bodies (:mod:`~oharness.recall.candidates`); None when none may pass.

        A note with a long body that cannot pass whatever its phrases and strongest word is
        left out (:func:`~.gate.may_pass_many`).
        """
        said = self._message_weight(message)
        topic, body_of = self._topic_of(message.groups, slots)
        shared = scored.shared[slots]
        may = gate.may_pass_many(shared, topic, said)
        body = body_of[slots]
        if not may.any():  # only a short note may pass, with its body words
            if not short.any():
                return None
            weights = (shared[short], topic[short] + body[short], said)
            if not self._hopeful(slots[short], weights, scored.scores).any():
                return None  # none can pass: nothing is attached
        keep = short | may
        if not keep.all():
            slots, short, shared = slots[keep], short[keep], shared[keep]
            topic, body = topic[keep], body[keep]
        where = positions(slots, scored.capacity)
        strongest = scored.strongest_at(slots, where, _STRONG)
        return Candidates(slots, short, shared, strongest, (topic, body), said, where)

    def _hopeful(
        self, slots: SlotArray, weights: tuple[FloatArray, FloatArray, float], scores: FloatArray
    ) -> BoolArray:
        """Per short note of ``slots``, False when it cannot pass even with its body words:
        ``weights`` are its shared weight, its topic with its body words and the message's
        weight; ``scores`` per slot of the index bound what the body words may add."""
        shared, topic, said = weights
        at_most = shared + scores[slots] * self._body_bounds()[slots]
        return gate.may_pass_many(at_most, topic, said)

    def _body_bounds(self) -> FloatArray:
        """Per slot, what times a note's score its body words never exceed for the gate
        (:meth:`_body_matches`), kept per version of the postings: a body word held once adds
        to the score its weight times the saturation of the body's length norm, or more, and
        the score is the sum of such parts (and of others, never negative)."""
        postings = self._postings
        if self._bounds[0] != postings.version:
            params = self._params
            norm = postings.norms(params)[:, 2].astype(np.float64)
            least = norm * (params.k1 + 1.0) / (norm + params.k1)
            self._bounds = (postings.version, (1.0 + _ROUNDING) / np.maximum(least, _TINY))
        return self._bounds[1]

    def judge(
        self, message: Message, candidates: Candidates, scores: FloatArray, per_turn: int
    ) -> tuple[SlotArray, FloatArray]:
        """The slots of the ``candidates`` whose notes the message names, and per note of them
        how many of its whole tags the message says (for ranking: :data:`~.gate.TAG_RANK`).

        ``scores``: per slot of the index. Every candidate is judged on its summary and tags
        at once; a short note that fails is judged again with its body words
        (:meth:`_judge_short`). Everyday words alone that pass on ``per_turn`` notes or more
        single none of them out.
        """
        slots, said = candidates.slots, candidates.said
        if not len(slots):
            return slots, np.zeros(0, dtype=np.float64)
        held = self._held.get_many([group[0] for group in message.groups] + message.phrases)
        tags, tag_only, phrase = self._named_at(message, candidates, held)
        message.named = frozenset(slots[phrase].tolist())
        shared, topic, strongest = candidates.shared, candidates.topic, candidates.strongest
        named = phrase | tag_only
        ok = gate.passes_many(shared, topic, said, named, strongest)
        retry = self._retried(candidates, ok, scores)
        if len(retry):
            strongest = strongest.copy()
            verdicts = self._judge_short(
                (message, held[: len(message.groups)]),
                slots[retry],
                (shared[retry], topic[retry] + candidates.body[retry], said),
                (phrase[retry], tag_only[retry]),
                strongest[retry],
            )
            passed, extra_strongest = zip(*verdicts, strict=True)
            ok[retry] = passed
            strongest[retry] = np.maximum(strongest[retry], extra_strongest)
        everyday = ok & ~named & (strongest < gate.DISTINCTIVE)
        if np.count_nonzero(everyday) >= per_turn:
            ok &= ~everyday
        return slots[ok], tags[ok]

    def _retried(self, candidates: Candidates, ok: BoolArray, scores: FloatArray) -> Positions:
        """The positions of the candidates judged again with their body words: of the short
        notes failing on their summary and tags, the :data:`~.gate.SHORT_CANDIDATES` best by
        score (``scores``, per slot), and of those the ones that may pass with their body."""
        retry = np.flatnonzero(candidates.short & ~ok)
        if not len(retry):
            return _NO_POSITIONS
        limit = gate.SHORT_CANDIDATES
        if len(retry) > limit:
            chosen = np.argpartition(-scores[candidates.slots[retry]], limit - 1)[:limit]
            retry = retry[chosen]
        weights = (
            candidates.shared[retry],
            candidates.topic[retry] + candidates.body[retry],
            candidates.said,
        )
        return retry[self._hopeful(candidates.slots[retry], weights, scores)]

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
        firsts = [group[0] for group in groups]
        if "".join(firsts).isascii():  # no word of a script written without spaces
            return head[slots], body
        unspaced = [not term.isascii() and unspaced_term(term) for term in firsts]
        if not any(unspaced):
            return head[slots], body
        if all(unspaced):
            return pairs[slots], body
        return head[slots] + pairs[slots], body

    def _judge_short(
        self,
        said_by: tuple[Message, list[Held]],
        slots: SlotArray,
        weights: tuple[FloatArray, FloatArray, float],
        named: tuple[BoolArray, BoolArray],
        strongest: FloatArray,
    ) -> list[tuple[bool, float]]:
        """Short notes judged with their body words beside their summary and tags: per slot,
        the verdict and the strongest body word matched. ``said_by``: the message and what the
        postings hold of each of its words' first term. ``weights``: ``shared`` and the topic
        with the body per note of ``slots``, ``said``; ``named`` as for :meth:`judge` (a
        phrase, a tag the summary does not use) and the ``strongest`` word of the summary and
        tags, per note of ``slots``.

        A phrase of the summary counts as before; a tag the summary does not use counts as
        one only with :data:`~.gate.NAMED_BODY_WORDS` body words matched beside it (the tag
        names whom or what, the body words what about it).
        """
        shared, topic, said = weights
        extras, strongests, counts = self._body_matches(*said_by, slots)
        verdicts: list[tuple[bool, float]] = []
        for extra, extra_strongest, words, *note in zip(
            extras,
            strongests,
            counts,
            shared.tolist(),
            topic.tolist(),
            named[0].tolist(),
            named[1].tolist(),
            strongest.tolist(),
            strict=True,
        ):
            if extra <= 0:  # no body word matched: the same words against a larger topic
                verdicts.append((False, 0.0))
                continue
            shared_here, topic_here, phrase, tag_only, strongest_here = note
            passed = gate.passes(
                shared_here + extra,
                topic_here,
                said,
                phrase=phrase or (tag_only and words >= gate.NAMED_BODY_WORDS),
                strongest=max(strongest_here, extra_strongest),
            )
            verdicts.append((passed, extra_strongest))
        return verdicts

    def _named_at(
        self, message: Message, candidates: Candidates, held: list[Held]
    ) -> tuple[FloatArray, BoolArray, BoolArray]:
        """Per candidate: how many of its whole tags the message says, whether one of them
        has a word its summary does not use (a synonym, another language, a name), and
        whether its summary holds one of the message's phrases. ``held``: what the postings
        hold of the message's words (each one's first term) and phrases.

        The notes of all of them are found among the candidates at once, each counted in its
        own row: tags, unused tags, phrases."""
        count = len(candidates)
        arrays: list[IntArray] = []
        rows: list[int] = []
        for tag, other in [(known.tag, known.unused) for known in held if known.tag is not None]:
            assert tag is not None  # (filtered)
            arrays.append(tag)
            rows.append(0)
            if other is not None:  # the tag has a word the summary does not use
                arrays.append(other)
                rows.append(count)
        phrases = [known.slots for known in held[len(message.groups) :] if known.slots is not None]
        arrays += phrases
        rows += [2 * count] * len(phrases)
        if not arrays:
            nothing = np.zeros(count, dtype=np.bool_)
            return np.zeros(count, dtype=np.float64), nothing, nothing.copy()
        found = candidates.where[_joined(arrays)]
        among = found >= 0
        found += np.repeat(np.array(rows, dtype=np.int32), [len(array) for array in arrays])
        counted = np.bincount(found[among], minlength=3 * count)
        tags, unused, named = counted[:count], counted[count : 2 * count], counted[2 * count :]
        # Each tag's notes are distinct, so counting slots counts the tags said per note.
        return tags.astype(np.float64), unused > 0, named > 0

    def _related_of(self, groups: Groups, said: set[str]) -> Related:
        """Per message word with related words (:mod:`~.related`), their terms not ``said``
        (every term of ``groups``)."""
        if said.isdisjoint(self._related_keys):
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
        self, message: Message, held: list[Held], slots: SlotArray
    ) -> tuple[list[float], list[float], list[int]]:
        """Per note of ``slots`` (short notes): the weight of the message words found in its
        body but not its summary or tags, the strongest of them and how many (each word's
        best stem), summed in the order the note holds them. ``held``: what the postings hold
        of each word's first term."""
        count = len(slots)
        extra, strongest, words = [0.0] * count, [0.0] * count, [0] * count
        word_of = self._said_terms(message, held)
        if not word_of:
            return extra, strongest, words
        said = set(word_of)
        for position, body in enumerate(self._bodies_of(slots)):
            found = said.intersection(body)
            if not found:
                continue
            # Two weights add up the same in any order; more are summed in the note's order.
            hits: Iterable[int] = found
            if len(found) > 2:
                hits = [term_id for term_id in body if term_id in found]
            best: dict[int, float] = {}  # word -> its best stem's weight
            for term_id in hits:
                number, weight = word_of[term_id]
                best[number] = max(best.get(number, 0.0), weight)
            for weight in best.values():
                extra[position] += weight
                strongest[position] = max(strongest[position], weight)
                words[position] += 1
        return extra, strongest, words

    def _said_terms(self, message: Message, held: list[Held]) -> dict[int, tuple[int, float]]:
        """The ids of the message's terms that can name something (weight at least
        :data:`~.score.MIN_TERM_WEIGHT`), each with its word's number and its weight.
        ``held``: what the postings hold of each word's first term."""
        groups = message.groups
        if sum(map(len, groups)) == len(groups):  # one term per word: most messages
            numbered = [
                (number, group[0], known.term_id)
                for number, (group, known) in enumerate(zip(groups, held, strict=True))
                if known.term_id is not None
            ]
        else:
            terms = [term for group in groups for term in group]
            numbers = [number for number, group in enumerate(groups) for _ in group]
            numbered = [
                (number, term, known.term_id)
                for number, term, known in zip(
                    numbers, terms, self._held.get_many(terms), strict=True
                )
                if known.term_id is not None
            ]
        # Only terms some note holds are asked of the table: it keeps nothing of the others.
        parts = self._table.get_many([term for _, term, _ in numbered])
        return {
            term_id: (number, part.weight)
            for (number, _, term_id), part in zip(numbered, parts, strict=True)
            # A term of weight under MIN_TERM_WEIGHT names nothing.
            if part is not None and part.weight >= MIN_TERM_WEIGHT
        }

    def _bodies_of(self, slots: SlotArray) -> list[tuple[int, ...]]:
        """Per note of ``slots``, the ids of the terms it holds in its body but not its summary
        or tags, in the entry's order; remembered per slot while its stamp (of the entry it
        holds) stays, for :data:`BODIES_KEPT` notes. The notes not remembered are read
        together: one mask over all their terms."""
        view = self._postings.entries_by_slot()
        numbers = slots.tolist()
        stamps = view.stamps()[slots].tolist()
        bodies = self._bodies
        found: list[tuple[int, ...] | None] = []
        missing: list[int] = []
        for position, (slot, stamp) in enumerate(zip(numbers, stamps, strict=True)):
            kept = bodies.get(slot)
            if kept is not None and kept[0] == stamp:
                found.append(kept[1])
            else:
                found.append(None)
                missing.append(position)
        if missing:
            if len(bodies) + len(missing) > BODIES_KEPT:
                bodies.clear()
            entries = [view[numbers[position]] for position in missing]
            for position, body in zip(missing, _body_only(entries), strict=True):
                bodies[numbers[position]] = (stamps[position], body)
                found[position] = body
        return cast(list[tuple[int, ...]], found)  # no None left

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


def _body_only(entries: list[NoteEntry | None]) -> list[tuple[int, ...]]:
    """Per entry (None: a free slot, no terms), the ids of the terms it holds in its body but
    not its summary or tags, in its order: one mask over all the entries' terms."""
    held = [entry for entry in entries if entry is not None]
    if not held:
        return [() for _ in entries]
    if len(held) == 1:
        term_ids, frequencies = held[0].term_ids, held[0].frequencies
    else:
        term_ids = np.concatenate([entry.term_ids for entry in held])
        frequencies = np.concatenate([entry.frequencies for entry in held])
    only = (frequencies[:, 2] > 0) & (frequencies[:, 0] + frequencies[:, 1] == 0)
    kept = term_ids[only].tolist()
    counted = np.cumsum(only)  # per term, the entries' body-only terms up to it
    result: list[tuple[int, ...]] = []
    start = end = 0  # of the entry among the terms, and of its body-only terms among ``kept``
    for entry in entries:
        if entry is not None and len(entry.term_ids):
            start += len(entry.term_ids)
            begin, end = end, counted.item(start - 1)
            result.append(tuple(kept[begin:end]))
        else:
            result.append(())
    return result


def _joined(arrays: list[IntArray]) -> IntArray:
    """The arrays one after the other."""
    return np.concatenate(arrays) if len(arrays) > 1 else arrays[0]


def _distinct_ids(term_ids: IntArray, size: int) -> IntArray:
    """The distinct ids of ``term_ids`` (each below ``size``), ascending: ``np.unique`` through
    a mark per id, several times cheaper on the many ids of a whole folder."""
    marked = np.zeros(size, dtype=np.bool_)
    marked[term_ids] = True
    distinct: IntArray = np.flatnonzero(marked).astype(np.int32)
    return distinct
