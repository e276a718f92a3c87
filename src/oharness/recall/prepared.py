"""Every base term's contributions at once, for one version of the postings.

:class:`~oharness.recall.accumulate.TermTable` computes a term's contributions when a message
first asks for it: a gather of its postings and a dozen array operations for the new terms of
each message, about 0.2 microseconds per posting. Once a version of the postings has served
enough messages, the same values for every term of the
:class:`~oharness.recall.layout.Base` are cheaper computed together, column by column over
all its postings at once (about 0.03 microseconds per posting: some 40 ms at 10,000 notes);
a term's contributions (:class:`TermScores`, what both paths give) are then slices of flat
arrays in term order.

When: once the postings filled lazily at one version reach :data:`PREPARE_SHARE` of the
base's (the table has spent on single terms about what preparing costs: never more than
about twice the cheaper of the two). A first recall of a new process or the first after an
edit never prepares; a version that serves few messages never does.

The values are those of the lazy path to the last bit: the same float64 operations in the
same order (the field-weighted frequency ``(f0 n0 + f1 n1) + f2 n2`` from float32
frequencies and float64 norms, then ``w (k1 + 1) x / (x + k1)``), and the weights asked of
the same function, once per distinct (count, prior).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Final, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from oharness.recall.layout import Base, FreqArray, IntArray, OffsetArray
from oharness.recall.score import MIN_TERM_WEIGHT

FloatArray = npt.NDArray[np.float64]
#: (one term id per distinct pair, their counts) -> the weights, in order.
WeighIds = Callable[[npt.NDArray[np.intp], list[int]], list[float]]

#: A version prepares once its lazily filled postings reach 1/8 of the base's.
PREPARE_SHARE: Final = 8
NO_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
NO_VALUES: Final[FloatArray] = np.empty(0, dtype=np.float64)
#: A vocabulary (term -> id) and the postings of the terms changed since the base, by id.
Lookup = tuple[Mapping[str, int], Mapping[int, tuple[IntArray, FreqArray]]]


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


class Views(NamedTuple):
    """Per term id of a :class:`Prepared`, its numbers read one at a time as Python numbers
    (a memory view reads an item at half the cost of ``ndarray.item``)."""

    starts: memoryview[int]
    head_starts: memoryview[int]
    tag_starts: memoryview[int]
    weights: memoryview[float]
    topic_weights: memoryview[float]


class Prepared:
    """The contributions of every term of a base at one version of the postings.

    A term's postings are ``starts[id]:starts[id + 1]`` of the base's slots and of
    ``contribution``; its summary-or-tags slots ``head_starts[id]:head_starts[id + 1]`` of
    ``head_slots``, its tags slots likewise (empty when the table keeps none).
    """

    def __init__(
        self,
        version: int,
        base: Base,
        contribution: FloatArray,
        weights: tuple[FloatArray, FloatArray],
        head: tuple[OffsetArray, IntArray],
        tags: tuple[OffsetArray, IntArray],
    ) -> None:
        self.version = version
        self.term_count = base.term_count
        self.starts, self.slots = base.term_starts, base.term_slots
        self.contribution = contribution
        #: Per term id, by the notes holding it, and by those holding it in summary or tags.
        self.weights, self.topic_weights = weights
        self.head_starts, self.head_slots = head
        self.tag_starts, self.tag_slots = tags

    @cached_property
    def views(self) -> Views:
        """The per-term arrays as memory views."""
        return Views(
            self.starts.data,
            self.head_starts.data,
            self.tag_starts.data,
            cast("memoryview[float]", self.weights.data),
            cast("memoryview[float]", self.topic_weights.data),
        )

    def scores(
        self, terms: list[str], lookup: Lookup, dense_from: float, slot_count: int
    ) -> tuple[dict[str, TermScores], int, list[str]]:
        """The scores of the ``terms`` these arrays hold, as slices of them (dense over
        ``slot_count`` slots when held by ``dense_from`` notes or more), and how many values
        they hold; and the other terms of ``lookup``'s vocabulary (changed since the base, or
        newer), to compute lazily. A term no note holds is in neither."""
        vocabulary, changed = lookup
        slots, contribution, head_slots = self.slots, self.contribution, self.head_slots
        starts, heads, tag_starts, weights, topic = self.views
        results: dict[str, TermScores] = {}
        values = 0
        rest: list[str] = []
        for term in terms:
            term_id = vocabulary.get(term)
            if term_id is None:
                continue
            if term_id >= self.term_count or term_id in changed:
                rest.append(term)
                continue
            start, end = starts[term_id], starts[term_id + 1]
            if start == end:
                continue
            values += end - start
            weight = weights[term_id]
            if weight < MIN_TERM_WEIGHT:  # as the lazy path: scores nothing, names nothing
                results[term] = TermScores(
                    weight, slots[start:end], NO_VALUES, None, NO_SLOTS, NO_SLOTS, weight
                )
                continue
            head = head_slots[heads[term_id] : heads[term_id + 1]]
            tagged = self.tag_slots[tag_starts[term_id] : tag_starts[term_id + 1]]
            if not len(tagged):
                tagged = NO_SLOTS
            if end - start < dense_from:
                piece = contribution[start:end]
                results[term] = TermScores(
                    weight, slots[start:end], piece, None, head, tagged, topic[term_id]
                )
                continue
            dense = np.zeros(slot_count, dtype=np.float64)
            dense[slots[start:end]] = contribution[start:end]
            results[term] = TermScores(
                weight, slots[start:end], NO_VALUES, dense, head, tagged, topic[term_id]
            )
            values += slot_count - (end - start)
        return results, values, rest

    @property
    def size(self) -> int:
        """Bytes held beside the base's own arrays."""
        arrays = (self.contribution, self.weights, self.topic_weights, self.head_starts)
        extra = (self.head_slots, self.tag_starts, self.tag_slots)
        return sum(array.nbytes for array in (*arrays, *extra))


def prepare(
    version: int,
    base: Base,
    norms: FloatArray,
    k1: float,
    weights: Callable[[npt.NDArray[np.int64]], FloatArray],
    *,
    tagged: bool,
) -> Prepared:
    """Every term of ``base`` at once: ``norms`` per slot and field (float64), ``weights``
    of the terms by their counts (the notes holding each term id, then those holding it in
    their summary or tags: twice as many counts as terms)."""
    frequencies, slots, starts = base.term_frequencies, base.term_slots, base.term_starts
    # As the lazy path: (f0 n0 + f1 n1) + f2 n2, each product in float64 (a float32 or 16-bit
    # count times a float64 is the float64 product). Indexing rather than ``take``: ``take``
    # first copies the int32 slots to a full-size array of intp.
    columns = [np.ascontiguousarray(norms[:, field]) for field in range(3)]
    x = columns[0][slots]
    x *= frequencies[:, 0]
    scratch = columns[1][slots]
    scratch *= frequencies[:, 1]
    x += scratch
    scratch = columns[2][slots]
    scratch *= frequencies[:, 2]
    x += scratch
    del scratch
    in_head = (frequencies[:, 0] > 0) | (frequencies[:, 1] > 0)
    head_starts = _starts(in_head, starts)
    held = np.diff(starts)
    both = weights(np.concatenate((held, np.diff(head_starts))))
    own, topic = both[: base.term_count], both[base.term_count :]
    contribution = np.repeat(own * (k1 + 1.0), held)
    contribution *= x
    x += k1
    contribution /= x
    tags_at = (np.zeros(base.term_count + 1, dtype=np.int64), slots[:0])
    if tagged:
        in_tags = frequencies[:, 1] > 0
        tags_at = (_starts(in_tags, starts), slots[in_tags])
    return Prepared(
        version, base, contribution, (own, topic), (head_starts, slots[in_head]), tags_at
    )


def _starts(flags: npt.NDArray[np.bool_], starts: OffsetArray) -> OffsetArray:
    """Where each term's flagged postings start among all flagged ones (and the end)."""
    counted = np.zeros(len(flags) + 1, dtype=np.int32)
    np.cumsum(flags, out=counted[1:])
    found: OffsetArray = counted[starts].astype(np.int64)
    return found


def distinct_weights(
    counts: npt.NDArray[np.int64], codes: npt.NDArray[np.intp] | None, weigh: WeighIds
) -> FloatArray:
    """Per item of ``counts``, ``weigh``'s weight, asked once per distinct (count, prior)
    with one item of each; ``codes`` numbers each item's prior (None: the weight depends on
    the count alone)."""
    key = counts if codes is None else counts * (int(codes.max(initial=0)) + 1) + codes
    present = np.zeros(int(key.max(initial=0)) + 1, dtype=np.bool_)
    present[key] = True
    one = np.zeros(len(present), dtype=np.intp)
    one[key] = np.arange(len(key), dtype=np.intp)  # some item of each key
    distinct = one[present]
    found = np.array(weigh(distinct, counts[distinct].tolist()), dtype=np.float64)
    rank = np.cumsum(present) - 1
    weighed: FloatArray = found[rank[key]]
    return weighed


class BasePriors:
    """The priors of terms by id, numbered (the same number for the same prior), kept across
    versions: a prior never changes, and ids only when the vocabulary is replaced (a load
    into an empty index makes another list of terms)."""

    def __init__(self, priors: Callable[[list[str]], list[float]]) -> None:
        self._priors_of = priors
        self._terms: list[str] | None = None
        self._codes: npt.NDArray[np.intp] = np.empty(0, dtype=np.intp)
        self._numbers: dict[float, int] = {}

    def codes(self, terms: list[str], count: int) -> npt.NDArray[np.intp]:
        """The numbers of the priors of the first ``count`` of ``terms`` (the vocabulary)."""
        if self._terms is not terms:
            self._terms, self._codes = terms, np.empty(0, dtype=np.intp)
        known = len(self._codes)
        if known < count:
            numbers = self._numbers
            add = numbers.setdefault
            more = [add(prior, len(numbers)) for prior in self._priors_of(terms[known:count])]
            self._codes = np.concatenate((self._codes, np.array(more, dtype=np.intp)))
        return self._codes[:count]
