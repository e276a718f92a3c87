"""The recall gate: does a message name a note's topic? (pure; spec 03.2; docs/recall.md, "The
gate").

Per note, with the recall weights of words in summaries and tags: ``shared`` (the message's
words in the note's summary or tags), ``topic`` (all of them) and ``said`` (the message's
words, at most :data:`MASS_CAP`). The Dice overlap ``2 · shared / (topic + said)`` must reach
:data:`OVERLAP_GATE` when a shared word is distinctive or a phrase of the summary (or a whole
tag it does not use) is said, :data:`EVERYDAY_OVERLAP_GATE` with everyday words alone; and
``shared`` must reach :data:`SHARED_GATE`. A long summary does not hide its note: the topic
is capped when the message says enough of it. A message that is mostly a rare word of the
note passes whatever the summary. Every candidate is judged at once (:func:`passes`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

import numpy as np
import numpy.typing as npt

#: Weight of a message counted at most (about six rare words); so is a note's topic when the
#: message shares a distinctive word of it and the shared words are at least
#: :data:`CAPPED_SHARE` of the message's weight.
MASS_CAP: Final = 6.0
CAPPED_SHARE: Final = 0.3
#: A note's topic counts at most this much when the message shares only everyday words of it,
#: at least two of them (:data:`EVERYDAY_PAIR`).
EVERYDAY_TOPIC_CAP: Final = 8.0
EVERYDAY_PAIR: Final = 1.1
#: Dice overlap of message and summary + tags a note needs to be attached (a distinctive
#: word shared, or a phrase of the summary said).
OVERLAP_GATE: Final = 0.2
#: The same, when every shared word is an everyday one and no phrase matches: several
#: everyday words name a topic together when they are a large part of it.
EVERYDAY_OVERLAP_GATE: Final = 0.3
#: Weight of the shared words a note needs: one rare word or two everyday ones.
SHARED_GATE: Final = 0.84
#: Weight of a distinctive word (not an everyday word, in at most ~6% of notes).
DISTINCTIVE: Final = 0.6
#: A rare word (in at most ~1.5% of notes) ...
RARE: Final = 0.9
#: ... naming the note, and this share of the message's weight found in its summary and
#: tags, attach a note whatever the length of its summary.
MESSAGE_SHARE: Final = 0.6
#: A note whose body has at most this many terms (a few sentences) is all topic: for the
#: gate its body may count beside its summary (the summary or tags must still match).
SHORT_BODY: Final = 60
#: How many passing notes are ranked (then cut to ``perTurn``).
GATE_CANDIDATES: Final = 12
#: How many short notes failing on their summary and tags are judged with their body too.
SHORT_CANDIDATES: Final = 6
#: A tag the summary does not use, said whole in the message, names the topic as a phrase
#: does; for a short note judged with its body, beside this many body words.
NAMED_BODY_WORDS: Final = 2
#: A passing note ranks by its score times 1 + this per whole tag the message says (tags are
#: the names the author gave the topic: "errors", "uploads", a speaker, a date).
TAG_RANK: Final = 0.25
#: Of the passing notes, those scoring under this share of the best one are not attached: a
#: clear match beside notes that barely pass is enough.
RELATIVE_FLOOR: Final = 0.6

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int32]


def passes(
    shared: FloatArray, topic: FloatArray, said: float, phrase: BoolArray, strongest: FloatArray
) -> BoolArray:
    """Per note, whether the message names its topic (see the module docstring): ``shared``,
    ``topic``, whether a phrase of its summary is said and the strongest shared word's
    weight per note; ``said`` the message's weight."""
    capped = min(said, MASS_CAP)
    rare = (strongest >= RARE) & (shared >= MESSAGE_SHARE * capped)
    distinctive = strongest >= DISTINCTIVE
    small_topic = np.where(distinctive, shared >= CAPPED_SHARE * capped, shared >= EVERYDAY_PAIR)
    cap = np.where(distinctive, MASS_CAP, EVERYDAY_TOPIC_CAP)
    topic = np.where(small_topic, np.minimum(topic, cap), topic)
    needed = np.where(phrase | distinctive, OVERLAP_GATE, EVERYDAY_OVERLAP_GATE)
    denominator = topic + capped
    dice = np.where(denominator > 0, 2.0 * shared / np.maximum(denominator, 1e-9), 0.0)
    result: BoolArray = (shared >= SHARED_GATE) & (rare | (dice >= needed))
    return result


@dataclass
class Candidates:
    """The notes one message's gate judges (ascending slots), as arrays over them: what is
    known of each before its tags, phrases and body are read. ``shared`` and ``strongest``
    may be lowered in place (:func:`~oharness.recall.surface.weaken_stem_only`)."""

    slots: IntArray
    short: BoolArray  # the note's body is short (:data:`SHORT_BODY`)
    shared: FloatArray  # the weight of the message's words in its summary or tags
    strongest: FloatArray  # the strongest of those words' weights
    topic: FloatArray  # the weight of its summary and tags in the message's scripts
    body: FloatArray  # the weight of a short note's other body words (else 0)
    said: float  # the weight of the message's words
    where: IntArray  # per slot of the index, its position among ``slots`` (-1: none)

    def __len__(self) -> int:
        return len(self.slots)

    def select(self, keep: BoolArray) -> Candidates:
        """The candidates of ``keep`` (``where`` is reused: this one's is no longer valid)."""
        where = self.where
        where[self.slots[~keep]] = -1
        where[self.slots[keep]] = np.arange(np.count_nonzero(keep), dtype=np.int32)
        arrays = ("slots", "short", "shared", "strongest", "topic", "body")
        return replace(self, **{name: getattr(self, name)[keep] for name in arrays})

    def flags(self, holders: IntArray) -> BoolArray:
        """Per candidate, whether ``holders`` (slots) holds it."""
        found = self.where[holders]
        flags = np.zeros(len(self.slots), dtype=np.bool_)
        flags[found[found >= 0]] = True
        return flags
