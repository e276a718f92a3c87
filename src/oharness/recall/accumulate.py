"""Score accumulation: the sum of :mod:`oharness.recall.score` over postings, with numpy.

For each query word the scorer needs, per note holding it, the word's weight times its
saturated field-weighted frequency, and which notes hold it in their summary or tags. Those
depend only on the index as it is (the notes, their lengths, the number of notes), not on the
message, so they are kept per term (:class:`TermTable`) and reused by every message until the
index changes: a recall then costs a few array additions per word instead of a dozen array
operations over its postings.

A term held by many notes is kept as a *dense* vector over every slot (zero where absent):
adding it to the scores is one vector addition, cheaper than scattering into several thousand
slots. The values are the same ones the sparse form holds, so scores do not depend on the form.

The tables are exact: they are dropped whenever a note is added, replaced or removed (the
number of notes and the average field lengths move every weight), and rebuilt lazily, term by
term, as messages need them. Their size is bounded (:data:`TABLE_VALUES`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.recall.postings import FreqArray, IntArray, Postings
from oharness.recall.score import MIN_TERM_WEIGHT, ScoringParams

FloatArray = npt.NDArray[np.float64]
#: Words of a query, each as its alternative terms, with a weight factor (1 for the user's).
WeightedGroups = list[tuple[tuple[str, ...], float]]

#: A term held by at least this share of the slots is kept dense (1/4).
DENSE_SHARE: Final = 4
#: Values (postings or dense slots) a table holds at most before it starts afresh.
TABLE_VALUES: Final = 4_000_000
_NO_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
_NO_VALUES: Final[FloatArray] = np.empty(0, dtype=np.float64)


class TermScores(NamedTuple):
    """What one term adds to the notes holding it (for one weighting: recall or search)."""

    weight: float
    slots: IntArray
    contribution: FloatArray  # weight * saturation per slot of ``slots`` (empty when dense)
    dense: FloatArray | None  # the same over every slot, for a term most notes hold
    head: IntArray  # slots holding the term in the summary or tags
    tagged: IntArray  # slots holding the term in the tags
    #: The weight by the notes holding the term in their summary or tags: how rare it is as
    #: a topic, what the recall gate weighs (a word many bodies use can still name a topic).
    topic_weight: float


class Scored(NamedTuple):
    """Per slot: the score, the weight of the message words matching summary or tags, and the
    strongest of those words; and the weight of each message term found in the index."""

    scores: FloatArray
    shared: FloatArray
    strongest: FloatArray
    weights: dict[str, float]
    covered: FloatArray  # search: the weight of the query words each note matches
    tagged: npt.NDArray[np.bool_]  # search: a query word matches the note's tags
    query_weight: float  # search: the weight of the query words any note holds


class TermTable:
    """Per-term contributions for one weighting, valid for one version of the postings."""

    def __init__(
        self, postings: Postings, params: ScoringParams, weigh: Callable[[str, int], float]
    ) -> None:
        self._postings = postings
        self._params = params
        self._weigh = weigh  # (term, document frequency) -> weight
        self._version = -1
        self._terms: dict[str, TermScores] = {}
        self._values = 0

    def get_many(self, terms: list[str]) -> list[TermScores | None]:
        """The contributions of each term (None where no note holds it).

        The terms not known yet are computed together: a handful of array operations for all
        of them rather than a dozen for each.
        """
        postings = self._postings
        if self._version != postings.version:
            self._terms, self._values, self._version = {}, 0, postings.version
        known = self._terms
        found: list[TermScores | None] = [known.get(term) for term in terms]
        missing: list[tuple[int, IntArray, FreqArray, float]] = []
        for position, term in enumerate(terms):
            if found[position] is not None:
                continue
            looked_up = postings.lookup(term)
            if looked_up is None:
                continue
            slots, frequencies = looked_up
            weight = self._weigh(term, len(slots))
            if weight < MIN_TERM_WEIGHT:  # scores nothing, names nothing
                found[position] = TermScores(
                    weight, slots, _NO_VALUES, None, _NO_SLOTS, _NO_SLOTS, weight
                )
            else:
                missing.append((position, slots, frequencies, weight))
        if missing:
            computed = self._compute(missing)
            for (position, *_), scored in zip(missing, computed, strict=True):
                topic = self._weigh(terms[position], len(scored.head))
                found[position] = scored._replace(topic_weight=topic)
        for term, result in zip(terms, found, strict=True):
            if result is not None and term not in known:
                self._keep(term, result)
        return found

    def _compute(self, missing: list[tuple[int, IntArray, FreqArray, float]]) -> list[TermScores]:
        norms = self._postings.norms(self._params)
        capacity = norms.shape[0]
        k1 = self._params.k1
        lengths = [len(slots) for _, slots, _, _ in missing]
        weights = [weight for *_, weight in missing]
        slots = np.concatenate([item[1] for item in missing])
        frequencies = np.concatenate([item[2] for item in missing])
        x = np.einsum("ij,ij->i", frequencies, norms[slots], dtype=np.float64)
        scaled = np.repeat(np.array(weights, dtype=np.float64) * (k1 + 1.0), lengths)
        contribution = scaled * x / (x + k1)
        in_head = (frequencies[:, 0] > 0) | (frequencies[:, 1] > 0)
        in_tags = frequencies[:, 1] > 0
        ends = np.cumsum(lengths).tolist()
        starts = [0, *ends[:-1]]
        heads = _pieces(slots[in_head], np.add.reduceat(in_head, starts))
        tags = _pieces(slots[in_tags], np.add.reduceat(in_tags, starts))
        results: list[TermScores] = []
        for number, (start, end) in enumerate(zip(starts, ends, strict=True)):
            piece, term_slots = contribution[start:end], slots[start:end]
            dense: FloatArray | None = None
            if end - start >= capacity / DENSE_SHARE:
                dense = np.zeros(capacity, dtype=np.float64)
                dense[term_slots] = piece
                piece = _NO_VALUES
            results.append(
                TermScores(
                    weights[number], term_slots, piece, dense, heads[number], tags[number], 0.0
                )
            )
        return results

    def _keep(self, term: str, scored: TermScores) -> None:
        size = len(scored.slots) if scored.dense is None else len(scored.dense)
        if self._values + size > TABLE_VALUES:
            self._terms, self._values = {}, 0
        self._terms[term] = scored
        self._values += size


def _pieces(values: IntArray, counts: npt.NDArray[np.intp]) -> list[IntArray]:
    """``values`` cut into consecutive pieces of ``counts`` items (views)."""
    ends = np.cumsum(counts).tolist()
    return [values[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]


def accumulate(table: TermTable, groups: WeightedGroups, capacity: int, *, search: bool) -> Scored:
    """Sum the contributions of ``groups`` over ``capacity`` slots (a word's best stem once).

    Only words of factor 1 (the message's own, not feedback words) count in ``shared``.
    ``search`` also fills ``covered`` and ``tagged``.
    """
    terms = [term for group, _ in groups for term in group]
    found = iter(table.get_many(terms))
    scores = np.zeros(capacity, dtype=np.float64)
    shared = np.zeros(capacity, dtype=np.float64)
    strongest = np.zeros(capacity, dtype=np.float64)
    covered = np.zeros(capacity if search else 0, dtype=np.float64)
    tagged = np.zeros(capacity if search else 0, dtype=np.bool_)
    single = _Singles()
    weights: dict[str, float] = {}
    query_weight = 0.0
    for group, factor in groups:
        parts: list[TermScores] = []
        for term in group:
            part = next(found)
            if part is None:
                continue
            weights[term] = part.topic_weight
            if part.weight >= MIN_TERM_WEIGHT:
                parts.append(part)
        if not parts:
            continue
        own = factor == 1.0
        if len(parts) == 1:
            single.add(scores, parts[0], factor, own=own)
        else:
            _add_best(scores, shared, strongest, parts, factor, own=own)
        if search and own:
            query_weight += max(part.weight for part in parts)
            for part in parts:
                tagged[part.tagged] = True
            if len(parts) > 1:
                best_weight = np.zeros(capacity, dtype=np.float64)
                for part in parts:
                    best_weight[part.slots] = np.maximum(best_weight[part.slots], part.weight)
                covered += best_weight
    single.finish(scores, shared, strongest, covered if search else None)
    return Scored(scores, shared, strongest, weights, covered, tagged, query_weight)


class _Singles:
    """The words with one stem, summed together at the end (one scatter for all)."""

    def __init__(self) -> None:
        self.slots: list[IntArray] = []
        self.contributions: list[FloatArray] = []
        self.heads: list[IntArray] = []
        self.head_weights: list[float] = []
        self.own_slots: list[IntArray] = []
        self.own_weights: list[float] = []

    def add(self, scores: FloatArray, part: TermScores, factor: float, *, own: bool) -> None:
        if part.dense is not None:
            scores += part.dense if factor == 1.0 else factor * part.dense
        else:
            self.slots.append(part.slots)
            self.contributions.append(
                part.contribution if factor == 1.0 else factor * part.contribution
            )
        if own:
            self.heads.append(part.head)
            self.head_weights.append(part.topic_weight)
            self.own_slots.append(part.slots)
            self.own_weights.append(part.weight)

    def finish(
        self,
        scores: FloatArray,
        shared: FloatArray,
        strongest: FloatArray,
        covered: FloatArray | None,
    ) -> None:
        capacity = len(scores)
        if self.slots:
            slots = np.concatenate(self.slots)
            scores += np.bincount(slots, np.concatenate(self.contributions), capacity)
        if self.heads:
            heads = np.concatenate(self.heads)
            if len(heads):
                weights = np.repeat(self.head_weights, [len(head) for head in self.heads])
                shared += np.bincount(heads, weights, capacity)
                np.maximum.at(strongest, heads, weights)
        if covered is not None and self.own_slots:
            lengths = [len(slots) for slots in self.own_slots]
            weights = np.repeat(self.own_weights, lengths)
            covered += np.bincount(np.concatenate(self.own_slots), weights, capacity)


def _add_best(
    scores: FloatArray,
    shared: FloatArray,
    strongest: FloatArray,
    parts: list[TermScores],
    factor: float,
    *,
    own: bool,
) -> None:
    """A word with several stems (several languages): each note counts its best stem."""
    capacity = len(scores)
    best = np.zeros(capacity, dtype=np.float64)
    best_shared = np.zeros(capacity, dtype=np.float64)
    for part in parts:
        if part.dense is not None:
            np.maximum(best, part.dense, out=best)
        else:
            best[part.slots] = np.maximum(best[part.slots], part.contribution)
        if own:
            best_shared[part.head] = np.maximum(best_shared[part.head], part.topic_weight)
    scores += best if factor == 1.0 else factor * best
    shared += best_shared
    np.maximum(strongest, best_shared, out=strongest)
