"""The notes the recall gate judges for one message, as arrays over those notes alone.

A message meets dozens of notes through the words of their summaries and tags (a long one
about a hundred); the gate reads each of them a few times - its shared weight, its topic, its
strongest word, its tags and phrases, for a short note its body. Every such reading is made
over the candidates only (:class:`Candidates`: one entry per candidate, in slot order), never
over every slot of the index: a note holding a word or a tag is found among the candidates
through one map from slot to position (:attr:`Candidates.where`), made once per message.

Before the gate reads tags, phrases or bodies, the notes that cannot pass whatever they hold
are left out (:func:`~oharness.recall.gate.may_pass_many`): a note whose shared weight is too
small a part of its topic and of the message for any phrase or rare word to make up. Only a
note with a long body is left out so: a short one may still pass with its body words, and the
short notes that fail on their summary and tags compete for the places of those judged again
with their body (:data:`~oharness.recall.gate.SHORT_CANDIDATES`), so each of them stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int32]
SlotArray = npt.NDArray[np.integer[Any]]


def positions(slots: SlotArray, capacity: int) -> IntArray:
    """Per slot of ``capacity``, its position among ``slots`` (distinct), -1 for the others."""
    where = np.full(capacity, -1, dtype=np.int32)
    where[slots] = np.arange(len(slots), dtype=np.int32)
    return where


@dataclass
class Candidates:
    """Per candidate of one message (ascending slots): what the gate knows before it reads
    the notes' tags, phrases and bodies. ``shared`` and ``strongest`` may be lowered in place
    (:func:`~oharness.recall.surface.weaken_stem_only`)."""

    slots: SlotArray
    short: BoolArray  # the note's body is short (:data:`~oharness.recall.gate.SHORT_BODY`)
    shared: FloatArray  # the weight of the message's words in its summary or tags
    strongest: FloatArray  # the strongest of those words' weights
    #: The weight of its summary and tags in the message's scripts, and of a short note's
    #: other body words (else 0).
    weights: tuple[FloatArray, FloatArray]
    said: float  # the weight of the message's words
    where: IntArray  # per slot of the index, its position among ``slots`` (-1: none)

    @property
    def topic(self) -> FloatArray:
        """Per candidate, the weight of its summary and tags in the message's scripts."""
        return self.weights[0]

    @property
    def body(self) -> FloatArray:
        """Per candidate, the weight of a short note's other body words (else 0)."""
        return self.weights[1]

    def __len__(self) -> int:
        return len(self.slots)

    def select(self, keep: BoolArray) -> Candidates:
        """The candidates of ``keep`` (per candidate); ``where`` is reused, so this one's
        positions are no longer valid."""
        where = self.where
        where[self.slots[~keep]] = -1
        slots = self.slots[keep]
        where[slots] = np.arange(len(slots), dtype=np.int32)
        return Candidates(
            slots,
            self.short[keep],
            self.shared[keep],
            self.strongest[keep],
            (self.topic[keep], self.body[keep]),
            self.said,
            where,
        )

    def among(self, holders: SlotArray) -> IntArray:
        """The positions of the candidates in ``holders`` (slots), once per time held."""
        found = self.where[holders]
        kept: IntArray = found[found >= 0]
        return kept

    def flags(self, holders: SlotArray) -> BoolArray:
        """Per candidate, whether ``holders`` (slots) holds it."""
        flags = np.zeros(len(self.slots), dtype=np.bool_)
        flags[self.among(holders)] = True
        return flags
