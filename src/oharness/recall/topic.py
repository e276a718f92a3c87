"""Topic weights for the recall gate, kept per slot (see :mod:`oharness.recall.gate`).

The gate needs, for each note, the recall weight of the words of its summary and tags (its
topic) and, for a short note, of the other words of its body. They are kept as two arrays
over the slots, so the gate judges every candidate at once:

- a topic word weighs by how many notes hold it in their *summary or tags* (a word many
  bodies use, "depend", "meeting", "docs", still names a topic when few notes are about it);
  a short note's body words weigh by how many notes hold them anywhere, as body words do;
- the arrays are computed for all notes together, and again when the number of notes moves
  by more than 2% (at least 20): a few edits barely move the weights of other notes' words;
- a note added or replaced in between has its own totals computed, with the weights of the
  index as it is then; a removed note's slot weighs nothing;
- the topic is kept in two parts, the words of scripts written with spaces and the pairs of
  those written without (CJK, Thai...): a note in two languages (a Japanese summary, English
  tags) names its topic twice, and a message in one of them is measured against that part.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

import numpy as np
import numpy.typing as npt

from oharness.recall.postings import EntryView, IntArray, NoteEntry
from oharness.recall.score import ScoringParams

#: How much the number of notes may move before the weights are renewed: the larger of this
#: count and :data:`RENEW_SHARE` of the notes.
RENEW_COUNT: Final = 20
RENEW_SHARE: Final = 50  # 1/50 = 2%

FloatArray = npt.NDArray[np.float64]
#: Term ids -> their priors (:meth:`~oharness.recall.tokenize.Tokenizer.prior`).
PriorsOf = Callable[[IntArray], FloatArray]
#: Term ids -> how many notes hold them (anywhere, or in their summary or tags).
CountsOf = Callable[[IntArray], IntArray]
#: Term ids -> True for the terms of scripts written without spaces.
UnspacedOf = Callable[[IntArray], npt.NDArray[np.bool_]]


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


def _split(entry: NoteEntry, short_body: int) -> tuple[IntArray, IntArray]:
    """A note's topic term ids, and the other term ids of its body when it is short."""
    frequencies, term_ids = entry.frequencies, entry.term_ids
    in_head = (frequencies[:, 0] + frequencies[:, 1]) > 0
    if entry.lengths[2] > short_body:
        return term_ids[in_head], term_ids[:0]
    return term_ids[in_head], term_ids[~in_head & (frequencies[:, 2] > 0)]


class TopicWeights:
    """Per-slot topic weights; see the module docstring."""

    def __init__(self, params: ScoringParams, short_body: int, unspaced: UnspacedOf) -> None:
        self._params = params
        self._short_body = short_body
        self._unspaced = unspaced
        self.reset()

    def reset(self) -> None:
        """Forget every weight (term ids may have been renumbered)."""
        self._note_count = -1
        self._version = -1
        self._stamps: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # -1: not computed
        self._head: FloatArray = np.zeros(0, dtype=np.float64)
        self._pairs: FloatArray = np.zeros(0, dtype=np.float64)
        self._body: FloatArray = np.zeros(0, dtype=np.float64)

    def arrays(
        self,
        entries: EntryView,
        version: int,
        note_count: int,
        priors: PriorsOf,
        frequencies: CountsOf,
        topic_frequencies: CountsOf,
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Per slot, the weight of the note's summary and tags words (of scripts written with
        spaces), of their pairs (scripts written without) and of the other words of its body
        when short (else 0), for the ``note_count`` notes ``entries`` holds at ``version`` (of
        the postings)."""
        if version == self._version:
            return self._head, self._pairs, self._body
        moved = abs(note_count - self._note_count) > max(RENEW_COUNT, note_count // RENEW_SHARE)
        if moved or len(self._stamps) > len(entries):
            self._renew(entries, note_count, priors, frequencies)
        else:
            self._update(entries, note_count, priors, frequencies, topic_frequencies)
        self._version = version
        return self._head, self._pairs, self._body

    def _renew(
        self,
        entries: EntryView,
        note_count: int,
        priors: PriorsOf,
        frequencies: CountsOf,
    ) -> None:
        """All slots' totals, the topic counts gathered from the entries themselves (every
        posting of every note masked at once; each note's summed in its entry's order)."""
        size = len(entries)
        owner, ids, counts = entries.flat()
        short = entries.body_lengths()[owner] <= self._short_body
        in_head = (counts[:, 0] + counts[:, 1]) > 0
        in_body = ~in_head & (counts[:, 2] > 0) & short
        head_ids, body_ids = ids[in_head], ids[in_body]
        topic_counts = np.bincount(head_ids).astype(np.int32) if len(head_ids) else head_ids
        params = self._params
        head_weights = term_weights(topic_counts[head_ids], note_count, priors(head_ids), params)
        body_weights = term_weights(frequencies(body_ids), note_count, priors(body_ids), params)
        unspaced = self._unspaced(head_ids)
        head_owner = owner[in_head]
        self._head = _per_slot(np.where(unspaced, 0.0, head_weights), head_owner, size)
        self._pairs = _per_slot(np.where(unspaced, head_weights, 0.0), head_owner, size)
        self._body = _per_slot(body_weights, owner[in_body], size)
        self._stamps = entries.stamps().copy()
        self._note_count = note_count

    def _update(
        self,
        entries: EntryView,
        note_count: int,
        priors: PriorsOf,
        frequencies: CountsOf,
        topic_frequencies: CountsOf,
    ) -> None:
        """The totals of the slots whose entry changed since they were computed."""
        size = len(entries)
        if len(self._head) < size:
            grow = np.zeros(size - len(self._head))
            self._head = np.concatenate((self._head, grow))
            self._pairs = np.concatenate((self._pairs, grow))
            self._body = np.concatenate((self._body, grow))
        if len(self._stamps) < size:
            unknown = np.full(size - len(self._stamps), -1, dtype=np.int64)
            self._stamps = np.concatenate((self._stamps, unknown))
        stamps = entries.stamps()
        params = self._params
        for slot in np.flatnonzero(stamps != self._stamps[:size]).tolist():
            self._stamps[slot] = stamps[slot]
            entry = entries[slot]
            if entry is None:
                self._head[slot] = self._pairs[slot] = self._body[slot] = 0.0
                continue
            head, body = _split(entry, self._short_body)
            weights = term_weights(topic_frequencies(head), note_count, priors(head), params)
            unspaced = self._unspaced(head)
            self._head[slot] = float(weights[~unspaced].sum())
            self._pairs[slot] = float(weights[unspaced].sum())
            self._body[slot] = float(
                term_weights(frequencies(body), note_count, priors(body), params).sum()
            )


def _per_slot(values: FloatArray, owners: npt.NDArray[np.intp], size: int) -> FloatArray:
    """Sums of ``values`` by their ``owners`` slot, one per slot."""
    return np.bincount(owners, values, size).astype(np.float64)
