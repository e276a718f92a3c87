"""The score of :mod:`oharness.recall.score` summed over the postings of a message's words.

For each word of a message (each as its alternative stems, with a factor: 1 for the user's
own words, less for related words) the postings of its stems are read
(:func:`read_terms`) and every note holding one gets the stem's weight times its saturated
field-weighted count; a word with several stems counts its best stem once per note. The sums
are taken word after word in the message's order, so a note's score does not depend on how
the postings are laid out. Beside the score, per note, ``shared``: the topic weight of the
message's own words found in its summary or tags (what the recall gate reads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.recall.postings import CountArray, IntArray, Postings
from oharness.recall.score import DEFAULT_PARAMS, MIN_TERM_WEIGHT, ScoringParams
from oharness.recall.tokenize import Tokenizer

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
#: Words of a query, each as its alternative terms, with a weight factor (1 for the user's).
WeightedGroups = list[tuple[tuple[str, ...], float]]
_NO_SLOTS: Final[IntArray] = np.empty(0, dtype=np.int32)


class TermInfo(NamedTuple):
    """What one term adds to the notes holding it, for one weighting (recall or search)."""

    term: str
    term_id: int
    weight: float  # by the notes holding it anywhere
    #: By the notes holding it in their summary or tags: how rare it is as a topic (what the
    #: recall gate weighs). A term under MIN_TERM_WEIGHT keeps its weight here and names none.
    topic_weight: float
    slots: IntArray
    counts: CountArray
    head: IntArray  # the slots holding it in the summary or tags
    plain: float  # its plain BM25 weight (search's), by the notes holding it anywhere


def read_terms(
    postings: Postings, tokenizer: Tokenizer, params: ScoringParams, terms: list[str], *,
    search: bool
) -> list[TermInfo | None]:  # fmt: skip
    """The postings and weights of each term, None where no note holds it. Recall weights
    (a prior, a cap) unless ``search`` (plain BM25 weights)."""
    note_count = len(postings)
    ids = postings.vocabulary.get_many(terms)
    read = [postings.postings(term_id) if term_id is not None else None for term_id in ids]
    held = np.array([0 if found is None else len(found[0]) for found in read])
    in_head = postings.head_held[[0 if term_id is None else term_id for term_id in ids]]
    plains = search_weight(held, note_count, params)
    if search:
        weights, topics = plains, search_weight(in_head, note_count, params)
    else:
        priors = list(map(tokenizer.prior, terms))
        weights = term_weight(held, note_count, priors, params)
        topics = term_weight(in_head, note_count, priors, params)
    found: list[TermInfo | None] = []
    for n, (term, term_id, postings_of) in enumerate(zip(terms, ids, read, strict=True)):
        if term_id is None or postings_of is None or not held[n]:
            found.append(None)
            continue
        slots, counts = postings_of
        weight, plain = float(weights[n]), float(plains[n])
        if weight < MIN_TERM_WEIGHT:
            found.append(TermInfo(term, term_id, weight, weight, slots, counts, _NO_SLOTS, plain))
            continue
        head = slots[(counts[:, 0] > 0) | (counts[:, 1] > 0)] if in_head[n] else _NO_SLOTS
        found.append(TermInfo(term, term_id, weight, float(topics[n]), slots, counts, head, plain))
    return found


def term_weight(
    document_frequency: npt.ArrayLike,
    note_count: int,
    prior: npt.ArrayLike,
    params: ScoringParams = DEFAULT_PARAMS,
) -> FloatArray:
    """The recall weight (rarity in [0, 1], :mod:`~.score`) of terms held by
    ``document_frequency`` notes, elementwise (numbers or arrays)."""
    notes = note_count + params.prior_notes + 1.0
    share = np.maximum(prior, (np.asarray(document_frequency) + 0.5) / notes)
    rarity = np.log(1.0 / share) / math.log(params.rarity_reference)
    weights: FloatArray = np.clip(rarity, 0.0, 1.0)
    return weights


def search_weight(
    document_frequency: npt.ArrayLike, note_count: int, params: ScoringParams = DEFAULT_PARAMS
) -> FloatArray:
    """The search weight: plain BM25 IDF (no prior, no cap), on the same unit as recall's."""
    held = np.asarray(document_frequency)
    idf = np.log(1.0 + (note_count - held + 0.5) / (held + 0.5))
    weights: FloatArray = idf / math.log(params.rarity_reference)
    return weights


@dataclass
class Scored:
    """Per slot the score and ``shared``; the topic weight of each message term found; the
    head slots and topic weight of each own word (for the strongest word of a note)."""

    scores: FloatArray
    shared: FloatArray
    weights: dict[str, float] = field(default_factory=dict)
    heads: dict[str, tuple[IntArray, float]] = field(default_factory=dict)
    #: The own words' terms (factor 1) as weighed here, what :func:`cover` reads.
    words: list[list[TermInfo]] = field(default_factory=list)
    #: With ``plain``: the same words scored as search scores them (see :func:`accumulate`).
    plain: Scored | None = None


def accumulate(
    infos: list[TermInfo | None],
    groups: WeightedGroups,
    norms: FloatArray,
    params: ScoringParams,
    *,
    plain: bool = False,
) -> Scored:
    """Sum the contributions of ``groups`` (``infos``: per term of the groups, in order) over
    the slots of ``norms`` (per slot and field, :meth:`~.postings.Postings.norms`).

    ``plain`` (recall weights): also score the own words (factor 1) with their plain weights,
    as search does, from the same saturated counts, in ``Scored.plain`` (the words weighing
    under :data:`~.score.MIN_TERM_WEIGHT` by recall weights are left out there too)."""
    capacity = len(norms)
    weights: dict[str, float] = {}
    words: list[tuple[float, list[TermInfo]]] = []  # per word scored: its factor and terms
    position = 0
    for group, factor in groups:
        parts: list[TermInfo] = []
        for term, info in zip(group, infos[position : position + len(group)], strict=True):
            if info is not None:
                weights[term] = info.topic_weight
                if info.weight >= MIN_TERM_WEIGHT:
                    parts.append(info)
        if parts:
            words.append((factor, parts))
        position += len(group)
    kept = [part for _, parts in words for part in parts]
    slots, values, lengths = _contributions(kept, norms, params)
    at, best, counts = _per_word(words, slots, values, lengths, capacity)
    factors = np.repeat([factor for factor, _ in words], counts)
    own_words = [parts for factor, parts in words if factor == 1.0]
    own = [part for parts in own_words for part in parts]
    held = [len(part.head) for part in own]
    topics = np.repeat([part.topic_weight for part in own], held)
    head = np.concatenate([_NO_SLOTS, *(part.head for part in own)])
    head, topics, _ = _per_word([(1.0, parts) for parts in own_words], head, topics, held, capacity)
    scored = Scored(
        _summed(at, best * factors, capacity),
        _summed(head, topics, capacity),
        weights,
        {part.term: (part.head, part.topic_weight) for part in own},
        own_words,
    )
    if plain:
        ratios = np.repeat([part.plain / part.weight for part in kept], lengths)
        _, plain_best, _ = _per_word(words, slots, values * ratios, lengths, capacity)
        mine = factors == 1.0
        scored.plain = Scored(
            _summed(at[mine], plain_best[mine], capacity),
            scored.shared,
            words=[[part._replace(weight=part.plain) for part in parts] for parts in own_words],
        )
    return scored


def _per_word(
    words: list[tuple[float, list[TermInfo]]],
    slots: IntArray,
    values: FloatArray,
    lengths: list[int],
    capacity: int,
) -> tuple[IntArray, FloatArray, list[int]]:
    """``values`` of the postings of ``words``' terms (``slots``, ``lengths`` per term, end to
    end) as per word, end to end: a word of one term has its term's, a word of several per
    note its best term's value; and how many per word."""
    if all(len(parts) == 1 for _, parts in words):
        return slots, values, lengths
    bounds = np.cumsum([0, *lengths]).tolist()
    found: list[tuple[IntArray, FloatArray]] = []
    first = 0
    for _, parts in words:
        start, end = bounds[first], bounds[first + len(parts)]
        first += len(parts)
        at, value = slots[start:end], values[start:end]
        if len(parts) > 1:  # several stems: per note the best (values are never negative)
            best = np.zeros(capacity, dtype=np.float64)
            np.maximum.at(best, at, value)
            held = np.zeros(capacity, dtype=np.bool_)
            held[at] = True
            at = np.flatnonzero(held).astype(np.int32)
            value = best[at]
        found.append((at, value))
    return (
        np.concatenate([_NO_SLOTS, *(at for at, _ in found)]),
        np.concatenate([np.zeros(0), *(best for _, best in found)]),
        [len(at) for at, _ in found],
    )


def _contributions(
    parts: list[TermInfo], norms: FloatArray, params: ScoringParams
) -> tuple[IntArray, FloatArray, list[int]]:
    """The postings of ``parts`` end to end, the value of each (its term's weight times its
    saturated field-weighted count), and how many per part."""
    if not parts:
        return _NO_SLOTS, np.zeros(0), []
    slots = np.concatenate([part.slots for part in parts])
    counts = np.concatenate([part.counts for part in parts]).astype(np.float64)
    rows = norms.take(slots, axis=0)
    x = counts[:, 0] * rows[:, 0] + counts[:, 1] * rows[:, 1]
    x += counts[:, 2] * rows[:, 2]
    k1 = params.k1
    lengths = [len(part.slots) for part in parts]
    scaled = np.repeat(np.array([part.weight for part in parts]) * (k1 + 1.0), lengths)
    values: FloatArray = scaled * x / (x + k1)
    return slots, values, lengths


def _summed(slots: IntArray, values: FloatArray, capacity: int) -> FloatArray:
    """Per slot, the sum of the values at it (in order)."""
    return np.bincount(slots, values, capacity).astype(np.float64, copy=False)


def cover(words: list[list[TermInfo]], capacity: int) -> tuple[FloatArray, float, FloatArray]:
    """For search, of a query's ``words`` (:attr:`Scored.words`): per slot the weight of the
    words it holds (each word's best stem); the query's weight; per slot the share of the
    query's tag facets (its words some note holds in its tags) the note holds in its tags."""
    parts = [part for word in words for part in word]
    lengths = [len(part.slots) for part in parts]
    at, best, _ = _per_word(
        [(1.0, word) for word in words],
        np.concatenate([_NO_SLOTS, *(part.slots for part in parts)]),
        np.repeat([part.weight for part in parts], lengths).astype(np.float64),
        lengths,
        capacity,
    )
    tagged: list[IntArray] = []
    for word in words:
        in_tags = [part.slots[part.counts[:, 1] > 0] for part in word]
        holders = in_tags[0] if len(in_tags) == 1 else np.unique(np.concatenate(in_tags))
        if len(holders):
            tagged.append(holders)
    facets = np.zeros(capacity)
    if tagged:
        facets = np.bincount(np.concatenate(tagged), minlength=capacity) / len(tagged)
    query_weight = sum(max(part.weight for part in word) for word in words)
    return _summed(at, best, capacity), query_weight, facets
