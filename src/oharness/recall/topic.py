"""Topic weights for the recall gate, memoised per note (see :mod:`oharness.recall.gate`).

The gate needs, for each candidate note, the recall weight of the words of its summary and
tags (its topic) and, for a short note, of the other words of its body. Computing them term by
term for every candidate of every message was the gate's main cost, so both are kept:

- term weights in an array indexed by term id (NaN: not computed yet), valid until the number
  of notes moves by more than 2% (at least 20): a few edits barely move the weights of other
  notes' words, and a weight is always computed from the index as it is when first needed;
- each note's two totals, computed once from those weights and dropped when the note is
  replaced (its slot then holds another entry) or the weights are renewed.

The totals are the plain sums, in term order, of the same weights, so the gate decides exactly
as when it summed them afresh each time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

import numpy as np
import numpy.typing as npt

from oharness.recall.postings import NoteEntry
from oharness.recall.score import ScoringParams

#: How much the number of notes may move before the memoised weights are renewed: the larger
#: of this count and :data:`RENEW_SHARE` of the notes.
RENEW_COUNT: Final = 20
RENEW_SHARE: Final = 50  # 1/50 = 2%


def term_weights(
    document_frequencies: npt.NDArray[np.int32],
    note_count: int,
    priors: npt.NDArray[np.float64],
    params: ScoringParams,
) -> npt.NDArray[np.float64]:
    """:func:`~oharness.recall.score.term_weight` of many terms at once, on arrays."""
    notes = note_count + params.prior_notes + 1.0
    share = np.maximum(priors, (document_frequencies + 0.5) / notes)
    rarity: npt.NDArray[np.float64] = np.log(1.0 / share) / math.log(params.rarity_reference)
    return np.clip(rarity, 0.0, 1.0)


WeightsOf = Callable[[npt.NDArray[np.int32]], npt.NDArray[np.float64]]


class TopicWeights:
    """Memoised per-note topic weights; see the module docstring."""

    def __init__(self) -> None:
        self._note_count = 0
        self._totals: dict[int, tuple[NoteEntry, float, float]] = {}

    def reset(self) -> None:
        """Forget every memoised weight (term ids may have been renumbered)."""
        self._note_count = 0
        self._totals = {}

    def totals(self, slot: int, entry: NoteEntry) -> tuple[float, float]:
        """The weight of the summary and tags words of the note in ``slot``, and of the other
        words of its body when the body is short (else 0), as :meth:`prepare` computed them."""
        cached = self._totals[slot]
        assert cached[0] is entry, "prepare() was not called for this note"
        return cached[1], cached[2]

    def prepare(
        self,
        notes: list[tuple[int, NoteEntry]],
        note_count: int,
        short_body: int,
        weights: WeightsOf,
    ) -> None:
        """Make sure the totals of these ``(slot, entry)`` notes are known, computing the
        missing ones together (one weight look-up for all their terms).

        A body of at most ``short_body`` terms counts; ``weights`` gives the recall weights of
        term ids in the index as it is now.
        """
        if abs(note_count - self._note_count) > max(RENEW_COUNT, note_count // RENEW_SHARE):
            self._totals = {}
            self._note_count = note_count
        known = self._totals
        pieces: list[npt.NDArray[np.int32]] = []
        missing: list[tuple[int, NoteEntry]] = []
        for slot, entry in notes:
            cached = known.get(slot)
            if cached is not None and cached[0] is entry:
                continue
            frequencies, term_ids = entry.frequencies, entry.term_ids
            in_head = (frequencies[:, 0] + frequencies[:, 1]) > 0
            pieces.append(term_ids[in_head])
            if entry.lengths[2] <= short_body:
                pieces.append(term_ids[~in_head & (frequencies[:, 2] > 0)])
            else:
                pieces.append(term_ids[:0])
            missing.append((slot, entry))
        if not missing:
            return
        values = weights(np.concatenate(pieces)).tolist()
        start = 0
        for number, (slot, entry) in enumerate(missing):
            middle = start + len(pieces[2 * number])
            end = middle + len(pieces[2 * number + 1])
            # Plain sums in term order: the same totals as summing the weights one by one.
            known[slot] = (entry, sum(values[start:middle]), sum(values[middle:end]))
            start = end
