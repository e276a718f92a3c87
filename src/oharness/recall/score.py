"""The recall score: its formula, its scale, the usage boost and summary similarity (pure).

A BM25F-style sum over the message's distinct words (docs/recall.md, "The score and its
scale", says how to read it: the scale ``memory.recall.minScore`` is on)::

    score = sum over words w of  max over w's stems t of  weight(t) * saturation(x_t)

    x_t        = sum over fields f of  boost_f * tf_f / (1 - b_f + b_f * len_f / avglen_f)
    saturation = x * (k1 + 1) / (x + k1)                                   # 0 .. 2.2
    weight(t)  = min(1, ln(1 / share_t) / ln(100))                         # 0 .. 1
    share_t    = max(prior_t, (df_t + 0.5) / (N + 101))

``N`` notes in the index, ``df_t`` of them holding ``t``; ``prior_t`` the share of notes an
everyday word is assumed to be in (:mod:`oharness.recall.words`). Search ranks by the same
sum with plain BM25 weights (no prior, no cap, divided by ln(100)) times the share of the
query's weight a note matches. Terms weighing under :data:`MIN_TERM_WEIGHT` are skipped: they
cannot move a note across the threshold and cost the most to sum.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

#: Upper bound of the usage boost: a tie-breaker, far below any word's contribution.
USAGE_BOOST_MAX: Final = 0.05
#: Recall count at which the frequency part of the usage boost is full.
USAGE_FULL_COUNT: Final = 20
#: Half-life of the recency part of the usage boost.
USAGE_HALF_LIFE_MS: Final = 30 * 24 * 3600 * 1000

#: Summary + tags similarity from which two notes are "likely duplicates".
LIKELY_DUPLICATE: Final = 0.6

#: Terms weighing less are skipped (see the module docstring).
MIN_TERM_WEIGHT: Final = 0.01


@dataclass(frozen=True)
class ScoringParams:
    """The constants of the formula above. The defaults are what ``minScore`` is calibrated on."""

    summary_boost: float = 3.0
    tags_boost: float = 3.0
    body_boost: float = 1.0
    summary_b: float = 0.3
    tags_b: float = 0.0
    body_b: float = 0.75
    k1: float = 1.2
    prior_notes: float = 100.0
    rarity_reference: float = 100.0

    @property
    def boosts(self) -> tuple[float, float, float]:
        """Field boosts in field order (summary, tags, body)."""
        return (self.summary_boost, self.tags_boost, self.body_boost)

    @property
    def length_factors(self) -> tuple[float, float, float]:
        """Length-normalisation strengths ``b`` in field order (summary, tags, body)."""
        return (self.summary_b, self.tags_b, self.body_b)


DEFAULT_PARAMS: Final = ScoringParams()


@dataclass(frozen=True)
class Usage:
    """How often a note was recalled on this machine, and when last (ms since the epoch)."""

    count: int
    last_used: int


def usage_boost(usage: Usage, now: int) -> float:
    """A tie-breaker added to a recalled note's score: at most :data:`USAGE_BOOST_MAX`.

    60% grows with the log of the recall count (full at :data:`USAGE_FULL_COUNT`), 40% decays
    with the time since last use (half-life :data:`USAGE_HALF_LIFE_MS`). It only reorders notes
    that already passed the gate and the threshold: usage never makes a note attach, so often
    recalled notes cannot crowd out the rest through their own popularity.
    """
    if usage.count <= 0:
        return 0.0
    frequency = min(1.0, math.log1p(usage.count) / math.log1p(USAGE_FULL_COUNT))
    age = max(0, now - usage.last_used)
    recency = 0.5 ** (age / USAGE_HALF_LIFE_MS) if usage.last_used > 0 else 0.0
    return USAGE_BOOST_MAX * (0.6 * frequency + 0.4 * recency)


def similarity(first: Collection[str], second: Collection[str]) -> float:
    """Cosine similarity of two term sets (|A ∩ B| / sqrt(|A| |B|)), 0 when either is empty.

    Fed with the summary + tags terms of two notes (stemmed; stop words and the most common
    words removed), values from :data:`LIKELY_DUPLICATE` (0.6) up mean "the same topic": e.g.
    "Pricing cards use fills, not borders" and "Pricing cards: fill instead of borders" score
    0.89, while "Cards on the dashboard use shadows" shares one word of four and scores 0.29.
    """
    a = first if isinstance(first, set | frozenset) else set(first)
    b = second if isinstance(second, set | frozenset) else set(second)
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))
