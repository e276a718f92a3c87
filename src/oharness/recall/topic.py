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

from collections.abc import Callable
from typing import Final

import numpy as np
import numpy.typing as npt

from oharness.recall.postings import NoteEntry

#: How much the number of notes may move before the memoised weights are renewed: the larger
#: of this count and :data:`RENEW_SHARE` of the notes.
RENEW_COUNT: Final = 20
RENEW_SHARE: Final = 50  # 1/50 = 2%


class TopicWeights:
    """Memoised per-note topic weights; see the module docstring."""

    def __init__(self) -> None:
        self._note_count = 0
        self._weights: npt.NDArray[np.float64] = np.empty(0, dtype=np.float64)
        self._totals: dict[int, tuple[NoteEntry, float, float]] = {}

    def reset(self) -> None:
        """Forget every memoised weight (term ids may have been renumbered)."""
        self._note_count = 0
        self._weights = np.empty(0, dtype=np.float64)
        self._totals = {}

    def totals(
        self,
        slot: int,
        entry: NoteEntry,
        note_count: int,
        short_body: int,
        weights: Callable[[list[int]], list[float]],
    ) -> tuple[float, float]:
        """The weight of the summary and tags words of the note in ``slot``, and of the other
        words of its body when the body has at most ``short_body`` terms (else 0).

        ``weights`` gives the recall weights of term ids in the index as it is now.
        """
        if abs(note_count - self._note_count) > max(RENEW_COUNT, note_count // RENEW_SHARE):
            self._weights = np.empty(0, dtype=np.float64)
            self._totals = {}
            self._note_count = note_count
        cached = self._totals.get(slot)
        if cached is not None and cached[0] is entry:
            return cached[1], cached[2]
        frequencies, term_ids = entry.frequencies, entry.term_ids
        in_head = (frequencies[:, 0] + frequencies[:, 1]) > 0
        head = self._sum(term_ids[in_head], weights)
        body = 0.0
        if entry.lengths[2] <= short_body:
            body = self._sum(term_ids[~in_head & (frequencies[:, 2] > 0)], weights)
        self._totals[slot] = (entry, head, body)
        return head, body

    def _sum(
        self, term_ids: npt.NDArray[np.int32], weights: Callable[[list[int]], list[float]]
    ) -> float:
        if len(term_ids) == 0:
            return 0.0
        needed = int(term_ids.max()) + 1
        if needed > len(self._weights):
            grown = np.full(max(needed, 2 * len(self._weights)), np.nan, dtype=np.float64)
            grown[: len(self._weights)] = self._weights
            self._weights = grown
        values = self._weights[term_ids]
        missing = np.isnan(values)
        if missing.any():
            new = term_ids[missing]
            self._weights[new] = weights(new.tolist())
            values = self._weights[term_ids]
        total: float = sum(values.tolist())
        return total
