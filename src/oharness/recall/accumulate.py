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

Speed: a message costs a handful of array operations whatever its length - the words' slots
and values are gathered in Python lists and summed in one scatter each (scores, shared
weights), the new terms of a message computed together. The sums are taken in a fixed order
(the dense and several-stem words first, in the message's order, then one scatter), so a
note's score does not depend on which other words were cached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.recall.candidates import SlotArray
from oharness.recall.postings import Found, IntArray, Postings
from oharness.recall.score import MIN_TERM_WEIGHT, ScoringParams

FloatArray = npt.NDArray[np.float64]
#: Words of a query, each as its alternative terms, with a weight factor (1 for the user's).
WeightedGroups = list[tuple[tuple[str, ...], float]]
#: (terms, how many notes hold each) -> the terms' weights, in order.
Weigh = Callable[[list[str], list[int]], list[float]]

#: A term held by at least this share of the slots kept (1/4) is kept dense.
DENSE_SHARE: Final = 4
#: Values (postings or dense slots) a table holds at most before it starts afresh.
TABLE_VALUES: Final = 4_000_000
_NO_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
_NO_VALUES: Final[FloatArray] = np.empty(0, dtype=np.float64)
_NO_FLAGS: Final[npt.NDArray[np.bool_]] = np.empty(0, dtype=np.bool_)


class TermScores(NamedTuple):
    """What one term adds to the notes holding it (for one weighting: recall or search)."""

    weight: float
    slots: IntArray
    contribution: FloatArray  # weight * saturation per slot of ``slots`` (empty when dense)
    dense: FloatArray | None  # the same over every slot, for a term most notes hold
    head: IntArray  # slots holding the term in the summary or tags
    tagged: IntArray  # slots holding the term in the tags (empty when the table keeps none)
    #: The weight by the notes holding the term in their summary or tags: how rare it is as
    #: a topic, what the recall gate weighs (a word many bodies use can still name a topic).
    topic_weight: float


class TermTable:
    """Per-term contributions for one weighting, valid for one version of the postings.

    ``tagged``: whether to keep each term's slots holding it in the tags (search reads them,
    recall does not).
    """

    def __init__(
        self,
        postings: Postings,
        params: ScoringParams,
        weigh: Weigh,
        *,
        tagged: bool = True,
    ) -> None:
        self._postings = postings
        self._params = params
        self._weigh = weigh
        self._tagged = tagged
        self._version = -1
        self._terms: dict[str, TermScores] = {}
        self._values = 0
        self._norms: FloatArray | None = None

    def get_many(self, terms: list[str]) -> list[TermScores | None]:
        """The contributions of each term (None where no note holds it).

        The terms not known yet are computed together: a handful of array operations for all
        of them rather than a dozen for each.
        """
        if self._version != self._postings.version:
            self._terms, self._values, self._version = {}, 0, self._postings.version
            self._norms = None
        found = list(map(self._terms.get, terms))
        if None in found:
            self._fill(terms, found)
        return found

    def _fill(self, terms: list[str], found: list[TermScores | None]) -> None:
        """Compute and keep the terms of ``found`` not known yet (in place)."""
        new = list(dict.fromkeys(t for t, known in zip(terms, found, strict=True) if known is None))
        sliced: dict[str, TermScores] = {}
        read = self._postings.lookup_many(new) if new else None
        if read is not None and read.positions:
            sliced, values = self._compute([new[p] for p in read.positions], read)
            self._keep(sliced, values)
        for position, term in enumerate(terms):
            if found[position] is None:
                found[position] = sliced.get(term)

    def _keep(self, computed: dict[str, TermScores], values: int) -> None:
        if self._values + values > TABLE_VALUES:
            self._terms, self._values = {}, 0
        self._terms.update(computed)
        self._values += values

    def _compute(self, terms: list[str], postings: Found) -> tuple[dict[str, TermScores], int]:
        """The scores of ``terms`` from their postings (each term's a slice of ``postings``):
        a fixed handful of array operations for all of them, then slices per term. And how
        many values they hold (postings, or slots of a dense term)."""
        count = len(terms)
        bounds, slots, frequencies = postings.bounds, postings.slots, postings.frequencies
        starts, ends = bounds[:-1], bounds[1:]
        lengths = [end - start for start, end in zip(starts, ends, strict=True)]
        # Frequencies are counts (never negative): in the summary or tags when their sum is not 0.
        in_head = (frequencies[:, 0] + frequencies[:, 1]) > 0
        head_counts = _counts(in_head, bounds)
        # One call for both weights (a term's depends on its count alone): by the notes holding
        # it, then by those holding it in their summary or tags.
        weights = self._weigh(terms + terms, lengths + head_counts)
        own, topic = weights[:count], weights[count:]
        contribution = self._contributions(postings, own, lengths)
        heads = _pieces(slots[in_head], head_counts)
        if self._tagged:
            in_tags = frequencies[:, 1] > 0
            tags = _pieces(slots[in_tags], _counts(in_tags, bounds))
        else:
            tags = [_NO_SLOTS] * count
        parts = zip(terms, own, topic, starts, ends, heads, tags, strict=True)
        dense_from = len(self._norm_rows()) / DENSE_SHARE  # of the rows kept (a stable threshold)
        if min(own) >= MIN_TERM_WEIGHT and max(lengths) < dense_from:  # the usual batch
            return {
                term: TermScores(weight, slots[a:b], contribution[a:b], None, head, tagged, named)
                for term, weight, named, a, b, head, tagged in parts
            }, bounds[-1]
        return self._each(list(parts), slots, contribution, dense_from)

    def _contributions(
        self, postings: Found, weights: list[float], lengths: list[int]
    ) -> FloatArray:
        """Per posting, its term's weight times its saturated field-weighted frequency."""
        norms = self._norm_rows()
        # The field-weighted frequency, field by field in order (as a float64 dot product; a
        # reduction over the three columns is several times slower for short rows).
        weighted = postings.frequencies * norms.take(postings.slots, axis=0)
        x = weighted[:, 0] + weighted[:, 1]
        x += weighted[:, 2]
        k1 = self._params.k1
        scaled = np.repeat(np.array(weights, dtype=np.float64) * (k1 + 1.0), lengths)
        contribution: FloatArray = scaled * x / (x + k1)
        return contribution

    def _each(
        self,
        parts: list[tuple[str, float, float, int, int, IntArray, IntArray]],
        slots: IntArray,
        contribution: FloatArray,
        dense_from: float,
    ) -> tuple[dict[str, TermScores], int]:
        """:meth:`_compute`'s terms one by one, some weightless or dense: each (term, weight,
        topic weight, start, end, head, tagged)."""
        results: dict[str, TermScores] = {}
        values = 0
        for term, weight, topic_weight, start, end, head, tagged in parts:
            if weight < MIN_TERM_WEIGHT:  # scores nothing, names nothing
                scored = TermScores(
                    weight, slots[start:end], _NO_VALUES, None, _NO_SLOTS, _NO_SLOTS, weight
                )
            elif end - start < dense_from:
                piece = contribution[start:end]
                scored = TermScores(
                    weight, slots[start:end], piece, None, head, tagged, topic_weight
                )
            else:  # most notes hold it: kept over every slot in use or free
                dense = np.zeros(len(self._postings.entries_by_slot()), dtype=np.float64)
                dense[slots[start:end]] = contribution[start:end]
                scored = TermScores(
                    weight, slots[start:end], _NO_VALUES, dense, head, tagged, topic_weight
                )
                values += len(dense) - (end - start)
            results[term] = scored
            values += end - start
        return results, values

    def _norm_rows(self) -> FloatArray:
        """The postings' length norms per slot and field (summary, tags, body), as float64."""
        if self._norms is None:
            self._norms = self._postings.norms(self._params).astype(np.float64)
        return self._norms


def _counts(flags: npt.NDArray[np.bool_], bounds: list[int]) -> list[int]:
    """How many of ``flags`` are set between each two consecutive ``bounds`` (none empty)."""
    if len(bounds) == 2:
        return [int(np.count_nonzero(flags))]
    counted: list[int] = np.add.reduceat(flags, bounds[:-1]).tolist()
    return counted


def _pieces(values: IntArray, counts: list[int]) -> list[IntArray]:
    """``values`` cut into consecutive pieces of ``counts`` items (views)."""
    pieces: list[IntArray] = []
    start = 0
    for count in counts:
        pieces.append(values[start : start + count])
        start += count
    return pieces


class Scored:
    """Per slot: the score and the weight of the message words matching summary or tags; the
    weight of each message term found in the index; for search, the query's coverage.

    The scores are summed when first read (a recall with no candidate never needs them);
    :meth:`strongest_at` gives the strongest word matching each note's summary or tags.
    """

    def __init__(self, capacity: int, search: bool) -> None:
        self.capacity = capacity
        self.weights: dict[str, float] = {}
        self.shared: FloatArray = _NO_VALUES
        self.covered = np.zeros(capacity, dtype=np.float64) if search else _NO_VALUES
        self.tagged = np.zeros(capacity, dtype=np.bool_) if search else _NO_FLAGS
        self.query_weight = 0.0  # search: the weight of the query words any note holds
        #: Full-size arrays added to the scores in the message's order (dense words, the
        #: best stem of words with several), then the sparse words' slots and values.
        self.ordered: list[FloatArray] = []
        self.slots: list[IntArray] = []
        self.values: list[FloatArray] = []
        self.heads: list[IntArray] = []
        self.head_weights: list[float] = []
        self.best_shared: list[FloatArray] = []  # several-stem words' shared weight, in order
        self.own_slots: list[IntArray] = []  # search: the query's one-stem words, their notes
        self.own_weights: list[float] = []  # ... and their weights
        self._scores: FloatArray | None = None

    @property
    def scores(self) -> FloatArray:
        """The score per slot."""
        if self._scores is None:
            self._scores = _summed(self.ordered, self.slots, self.values, self.capacity)
        return self._scores

    def strongest_at(self, slots: SlotArray, where: IntArray, floor: float) -> FloatArray:
        """Per slot of ``slots``, the strongest topic weight of the message words in its
        summary or tags where it reaches ``floor``, else a weight under ``floor`` and no more
        than the strongest (only the words of weight ``floor`` or more are read, and few
        notes hold each of those). ``where``: per slot of the index, its position among
        ``slots`` (-1 for the others)."""
        strongest = np.zeros(len(slots), dtype=np.float64)
        for best in self.best_shared:
            np.maximum(strongest, best[slots], out=strongest)
        strong = [
            (head, weight)
            for head, weight in zip(self.heads, self.head_weights, strict=True)
            if weight >= floor and len(head)
        ]
        if strong:
            heads = [head for head, _ in strong]
            found = where[np.concatenate(heads) if len(heads) > 1 else heads[0]]
            held = found >= 0
            weights = np.repeat(np.array([weight for _, weight in strong]), list(map(len, heads)))
            np.maximum.at(strongest, found[held], weights[held])
        return strongest

    def sum_shared(self) -> None:
        """Set :attr:`shared` from the words gathered (the several-stem words first)."""
        shared: FloatArray | None = None
        for best in self.best_shared:
            shared = best.copy() if shared is None else _added(shared, best)
        if self.heads:
            head_slots = np.concatenate(self.heads)
            if len(head_slots):
                lengths = [len(head) for head in self.heads]
                values = np.repeat(np.array(self.head_weights, dtype=np.float64), lengths)
                counted = _scatter(head_slots, values, self.capacity)
                shared = counted if shared is None else _added(shared, counted)
        self.shared = shared if shared is not None else np.zeros(self.capacity, dtype=np.float64)


def _scatter(slots: IntArray, values: FloatArray, capacity: int) -> FloatArray:
    """Per slot, the sum of the ``values`` at it, in their order (a weighted ``bincount``)."""
    return np.bincount(slots, values, capacity).astype(np.float64, copy=False)


def _added(total: FloatArray, more: FloatArray) -> FloatArray:
    total += more
    return total


def _summed(
    ordered: list[FloatArray], slots: list[IntArray], values: list[FloatArray], capacity: int
) -> FloatArray:
    """The full-size arrays in order, then the sparse values scattered (0 + x is x exactly,
    so starting from the first array rather than zeros changes no bit)."""
    total: FloatArray | None = None
    for array in ordered:
        total = array.copy() if total is None else _added(total, array)
    if slots:
        scattered = _scatter(np.concatenate(slots), np.concatenate(values), capacity)
        total = scattered if total is None else _added(total, scattered)
    return total if total is not None else np.zeros(capacity, dtype=np.float64)


def accumulate(table: TermTable, groups: WeightedGroups, capacity: int, *, search: bool) -> Scored:
    """Sum the contributions of ``groups`` over ``capacity`` slots (a word's best stem once).

    Only words of factor 1 (the message's own, not feedback words) count in ``shared``.
    ``search`` also fills ``covered`` and ``tagged``.
    """
    terms = [term for group, _ in groups for term in group]
    found = table.get_many(terms)
    scored = Scored(capacity, search)
    weights = scored.weights
    position = 0
    add_slots, add_values = scored.slots.append, scored.values.append
    add_head, add_head_weight = scored.heads.append, scored.head_weights.append
    for group, factor in groups:
        if len(group) == 1:  # most words: one stem
            part = found[position]
            position += 1
            if part is None:
                continue
            weights[group[0]] = part.topic_weight
            if part.weight < MIN_TERM_WEIGHT:
                continue
            if factor == 1.0 and part.dense is None and not search:  # the usual word
                add_slots(part.slots)
                add_values(part.contribution)
                add_head(part.head)
                add_head_weight(part.topic_weight)
                continue
            parts = [part]
        else:
            parts = _found_parts(group, found[position : position + len(group)], weights)
            position += len(group)
        if not parts:
            continue
        if len(parts) > 1:
            _add_best(scored, parts, factor, own=factor == 1.0)
        else:
            _add_one(scored, parts[0], factor, search=search)
        if search and factor == 1.0:
            _cover(scored, parts)
    scored.sum_shared()
    if search and scored.own_slots:
        lengths = [len(slots) for slots in scored.own_slots]
        weights_repeated = np.repeat(scored.own_weights, lengths)
        scored.covered += np.bincount(np.concatenate(scored.own_slots), weights_repeated, capacity)
    return scored


def _found_parts(
    group: tuple[str, ...], found: list[TermScores | None], weights: dict[str, float]
) -> list[TermScores]:
    """The scoring stems of a word with several (``found`` per stem), each stem's topic weight
    noted in ``weights``."""
    parts: list[TermScores] = []
    for term, part in zip(group, found, strict=True):
        if part is not None:
            weights[term] = part.topic_weight
            if part.weight >= MIN_TERM_WEIGHT:
                parts.append(part)
    return parts


def _add_one(scored: Scored, part: TermScores, factor: float, *, search: bool) -> None:
    """A word with one scoring stem, of any factor, dense or sparse."""
    own = factor == 1.0
    if part.dense is not None:
        scored.ordered.append(part.dense if own else factor * part.dense)
    else:
        scored.slots.append(part.slots)
        scored.values.append(part.contribution if own else factor * part.contribution)
    if own:
        scored.heads.append(part.head)
        scored.head_weights.append(part.topic_weight)
        if search:
            scored.own_slots.append(part.slots)
            scored.own_weights.append(part.weight)


def _cover(scored: Scored, parts: list[TermScores]) -> None:
    """Search: the query word of ``parts`` in the query's weight and in the notes' tags, and,
    for a word with several stems, each note's best stem in ``covered``."""
    scored.query_weight += max(part.weight for part in parts)
    for part in parts:
        scored.tagged[part.tagged] = True
    if len(parts) > 1:
        best_weight = np.zeros(scored.capacity, dtype=np.float64)
        for part in parts:
            best_weight[part.slots] = np.maximum(best_weight[part.slots], part.weight)
        scored.covered += best_weight


def _add_best(scored: Scored, parts: list[TermScores], factor: float, *, own: bool) -> None:
    """A word with several stems (several languages): each note counts its best stem."""
    capacity = scored.capacity
    best = np.zeros(capacity, dtype=np.float64)
    best_shared = np.zeros(capacity, dtype=np.float64)
    for part in parts:
        if part.dense is not None:
            np.maximum(best, part.dense, out=best)
        else:
            best[part.slots] = np.maximum(best[part.slots], part.contribution)
        if own:
            best_shared[part.head] = np.maximum(best_shared[part.head], part.topic_weight)
    scored.ordered.append(best if factor == 1.0 else factor * best)
    scored.best_shared.append(best_shared)
