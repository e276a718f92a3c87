"""Every term's contributions at once, for one version of the postings.

:class:`~oharness.recall.accumulate.TermTable` computes a term's contributions when a message
first asks for it: a gather of its postings and a dozen array operations for the new terms of
each message, about 0.2 microseconds per posting. Once a version of the postings has served
enough messages, the same values for every term are cheaper computed together, column by
column over all the postings at once (about 0.04 microseconds per posting: some 50 ms at
10,000 notes): the :class:`~oharness.recall.layout.Base`'s term-order arrays, then the own
arrays of the terms changed since the base (or added after it), joined; a changed term's run
in the base is computed too but never read. A term's contributions (:class:`TermScores`,
what both paths give) are then slices of these flat arrays.

When: once the postings filled lazily at one version reach :data:`PREPARE_SHARE` of those
preparing computes (the table has spent on single terms about what preparing costs: never
more than about twice the cheaper of the two). A first recall of a new process or the first
after an edit never prepares; a version that serves few messages never does.

The values are those of the lazy path to the last bit: the same float64 operations in the
same order (the field-weighted frequency ``(f0 n0 + f1 n1) + f2 n2`` from float32
frequencies and float64 norms, then ``w (k1 + 1) x / (x + k1)``), and the weights asked of
the same function, once per distinct (count, prior).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Final, NamedTuple, TypeVar, cast

import numpy as np
import numpy.typing as npt

from oharness.recall.layout import (
    FIELD_COUNT,
    Base,
    FreqArray,
    IntArray,
    OffsetArray,
    StoredFreqArray,
)
from oharness.recall.score import MIN_TERM_WEIGHT

FloatArray = npt.NDArray[np.float64]
#: (one term id per distinct pair, their counts) -> the weights, in order.
WeighIds = Callable[[npt.NDArray[np.intp], list[int]], list[float]]

#: A version prepares once its lazily filled postings reach 1/8 of the base's.
PREPARE_SHARE: Final = 8
NO_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)
NO_VALUES: Final[FloatArray] = np.empty(0, dtype=np.float64)
_NO_FREQUENCIES: Final[FreqArray] = np.empty((0, FIELD_COUNT), dtype=np.float32)
_Item = TypeVar("_Item", bound=np.generic)


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
    """Per term id of a :class:`Prepared`, where its runs begin and end and its weights, read
    one at a time as Python numbers (a memory view reads an item at half the cost of
    ``ndarray.item``)."""

    begins: memoryview[int]
    ends: memoryview[int]
    head_begins: memoryview[int]
    head_ends: memoryview[int]
    tag_begins: memoryview[int]
    tag_ends: memoryview[int]
    weights: memoryview[float]
    topic_weights: memoryview[float]


#: Where each term's run begins and ends (per term id), and the runs (slots).
Runs = tuple[OffsetArray, OffsetArray, IntArray]
#: The postings of the terms changed since the base (or of every term, with no base), by id.
Changed = Mapping[int, tuple[IntArray, FreqArray]]


class Prepared:
    """The contributions of every term at one version of the postings.

    A term's postings are ``begins[id]:ends[id]`` of ``slots`` and ``contribution`` (the
    base's run, or the run of its own arrays for a term changed since); its summary-or-tags
    slots and its tags slots runs of ``head`` and ``tags`` likewise (``tags`` None when the
    table keeps none).
    """

    def __init__(
        self,
        version: int,
        postings: Runs,
        contribution: FloatArray,
        weights: tuple[FloatArray, FloatArray],
        head: Runs,
        tags: Runs | None,
    ) -> None:
        self.version = version
        self.begins, self.ends, self.slots = postings
        self.term_count = len(self.begins)
        self.contribution = contribution
        #: Per term id, by the notes holding it, and by those holding it in summary or tags.
        self.weights, self.topic_weights = weights
        self.head, self.tags = head, tags
        #: Whether ``slots`` is a copy (the base's and the changed terms' joined).
        self.joined = False

    @cached_property
    def views(self) -> Views:
        """The per-term arrays as memory views."""
        return Views(
            self.begins.data,
            self.ends.data,
            self.head[0].data,
            self.head[1].data,
            *(self.tags[0].data, self.tags[1].data) if self.tags else (self.begins.data,) * 2,
            cast("memoryview[float]", self.weights.data),
            cast("memoryview[float]", self.topic_weights.data),
        )

    def scores(
        self, terms: list[str], vocabulary: Mapping[str, int], dense_from: float, slot_count: int
    ) -> tuple[dict[str, TermScores], int, list[str]]:
        """The scores of the ``terms`` these arrays hold, as slices of them (dense over
        ``slot_count`` slots when held by ``dense_from`` notes or more), and how many values
        they hold; and the terms of ``vocabulary`` made since, to compute lazily. A term no
        note holds is in neither."""
        slots, contribution = self.slots, self.contribution
        head_slots, tag_slots = self.head[2], self.tags[2] if self.tags else None
        begins, ends, head_begins, head_ends, tag_begins, tag_ends, weights, topic = self.views
        results: dict[str, TermScores] = {}
        values = 0
        rest: list[str] = []
        for term in terms:
            term_id = vocabulary.get(term)
            if term_id is None:
                continue
            if term_id >= self.term_count:
                rest.append(term)
                continue
            start, end = begins[term_id], ends[term_id]
            if start == end:
                continue
            values += end - start
            weight = weights[term_id]
            if weight < MIN_TERM_WEIGHT:  # as the lazy path: scores nothing, names nothing
                results[term] = TermScores(
                    weight, slots[start:end], NO_VALUES, None, NO_SLOTS, NO_SLOTS, weight
                )
                continue
            head = head_slots[head_begins[term_id] : head_ends[term_id]]
            tagged = NO_SLOTS
            if tag_slots is not None and tag_ends[term_id] > tag_begins[term_id]:
                tagged = tag_slots[tag_begins[term_id] : tag_ends[term_id]]
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
        """Bytes held beside the postings' own arrays (the slots counted when copied)."""
        arrays: list[npt.NDArray[np.generic]] = [
            self.contribution,
            self.weights,
            self.topic_weights,
        ]
        arrays += [self.begins, self.ends, *self.head, *(self.tags or ())]
        if self.joined:
            arrays.append(self.slots)
        return sum(array.nbytes for array in arrays)


def prepare(
    version: int,
    postings: tuple[Base | None, Changed, int],
    norms: FloatArray,
    k1: float,
    weights: Callable[[npt.NDArray[np.int64]], FloatArray],
    *,
    tagged: bool,
) -> Prepared:
    """Every term at once: ``postings`` (the base, the terms changed since, how many terms),
    ``norms`` per slot and field (float64), ``weights`` of the terms by their counts (the
    notes holding each term id, then those holding it in their summary or tags: twice as
    many counts as terms). A changed term's run in the base is computed but never read."""
    base, changed, count = postings
    parts = _parts(base, changed)
    columns = [np.ascontiguousarray(norms[:, field]) for field in range(3)]
    x = _joined([_field_weighted(columns, slots, frequencies) for slots, frequencies in parts])
    slots = _joined([slots for slots, _ in parts])
    in_head = _joined([(f[:, 0] > 0) | (f[:, 1] > 0) for _, f in parts])  # counts: never < 0
    begins, ends = _bounds(base, changed, count)
    head = _flagged(in_head, begins, ends, slots)
    both = weights(np.concatenate((ends - begins, head[1] - head[0])))
    own, topic = both[:count], both[count:]
    scaled = own * (k1 + 1.0)
    pieces: list[FloatArray] = []
    if base is not None:
        pieces.append(np.repeat(scaled[: base.term_count], base.held))
    if changed:
        ids = np.fromiter(changed, np.intp, len(changed))
        lengths = np.fromiter((len(run[0]) for run in changed.values()), np.int64, len(ids))
        pieces.append(np.repeat(scaled[ids], lengths))
    contribution = _joined(pieces)
    contribution *= x
    x += k1
    contribution /= x
    tags: Runs | None = None
    if tagged:
        tags = _flagged(_joined([f[:, 1] > 0 for _, f in parts]), begins, ends, slots)
    prepared = Prepared(version, (begins, ends, slots), contribution, (own, topic), head, tags)
    prepared.joined = len(parts) > 1
    return prepared


def _parts(base: Base | None, changed: Changed) -> list[tuple[IntArray, StoredFreqArray]]:
    """The postings to compute: the base's, then every changed term's, concatenated."""
    parts: list[tuple[IntArray, StoredFreqArray]] = []
    if base is not None:
        parts.append((base.term_slots, base.term_frequencies))
    if changed or not parts:
        runs = list(changed.values())
        slots = np.concatenate([NO_SLOTS, *(run[0] for run in runs)])
        frequencies = np.concatenate([_NO_FREQUENCIES, *(run[1] for run in runs)])
        parts.append((slots, frequencies))
    return parts


def _field_weighted(
    columns: list[FloatArray], slots: IntArray, frequencies: StoredFreqArray
) -> FloatArray:
    """As the lazy path: (f0 n0 + f1 n1) + f2 n2, each product in float64 (a float32 or 16-bit
    count times a float64 is the float64 product). Indexing rather than ``take``: ``take``
    first copies the int32 slots to a full-size array of intp."""
    x = columns[0][slots]
    x *= frequencies[:, 0]
    scratch = columns[1][slots]
    scratch *= frequencies[:, 1]
    x += scratch
    scratch = columns[2][slots]
    scratch *= frequencies[:, 2]
    x += scratch
    return x


def _joined(arrays: list[npt.NDArray[_Item]]) -> npt.NDArray[_Item]:
    """The arrays one after the other (the only one as it is)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _bounds(base: Base | None, changed: Changed, count: int) -> tuple[OffsetArray, OffsetArray]:
    """Per term id, where its run begins and ends among the postings of :func:`_parts`."""
    begins = np.zeros(count, dtype=np.int64)
    ends = np.zeros(count, dtype=np.int64)
    done = 0
    if base is not None:
        begins[: base.term_count] = base.term_starts[:-1]
        ends[: base.term_count] = base.term_starts[1:]
        done = int(base.term_starts[-1])
    if changed:
        ids = np.fromiter(changed, np.intp, len(changed))
        lengths = np.fromiter((len(run[0]) for run in changed.values()), np.int64, len(ids))
        ends[ids] = done + np.cumsum(lengths)
        begins[ids] = ends[ids] - lengths
    return begins, ends


def _flagged(
    flags: npt.NDArray[np.bool_], begins: OffsetArray, ends: OffsetArray, slots: IntArray
) -> Runs:
    """Where each term's flagged postings begin and end among all flagged ones, and their
    slots."""
    counted = np.zeros(len(flags) + 1, dtype=np.int32)
    np.cumsum(flags, out=counted[1:])
    return counted[begins].astype(np.int64), counted[ends].astype(np.int64), slots[flags]


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
