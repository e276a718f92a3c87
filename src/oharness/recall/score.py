"""The recall score: its formula, its scale, the usage boost and summary similarity (pure).

The score of a note for a message is a BM25F-style sum over the message's distinct words::

    score = sum over words w of  max over w's stems t of  weight(t) * saturation(x_t)

    x_t          = sum over fields f of  boost_f * tf_f / (1 - b_f + b_f * len_f / avglen_f)
    saturation   = x * (k1 + 1) / (x + k1)                       # 0 .. k1 + 1 = 2.2
    weight(t)    = min(1, ln((N + N0 + 1) / (df_t + N0 * prior_t + 0.5)) / ln(R))

with fields summary (boost 3), tags (boost 3) and body (boost 1), ``N`` notes in the index,
``df_t`` of them holding ``t``, ``N0 = 100`` pseudo-notes of background text in which a term
has the share ``prior_t`` (0 for ordinary words, 0.08 for everyday words, 0.25 for the most
common ones; see :mod:`oharness.recall.words`), and ``R = 100``.

How to read it (this is the scale ``memory.recall.minScore`` is on):

- ``weight`` is a rarity in [0, 1]: 1 for a word in at most ~1% of notes, 0.5 for one in
  ~10%, ~0.25 for everyday words like "weekend" or "thanks", 0 for a word in every note. The
  cap at 1 and the background prior are what make the scale the same at 10 notes and at 10,000:
  in a small index every word is rare, and the prior stops chit-chat from looking distinctive;
  in a large one the cap stops the many truly rare words from outweighing a summary match.
- A rare word once in an average body scores 1.0; in the summary or tags ~1.57; in both ~1.7
  (at most 2.2). So the default threshold 1.2 means "a distinctive word of the message names
  the note in its summary or tags, or several weaker words match" - and recall additionally
  requires a match in summary or tags (the gate).

Search (``memory(query)``) uses the same formula without the cap, so that among rare words
the rarer still ranks higher; its scores are for ordering only.

Terms whose weight is below :data:`MIN_TERM_WEIGHT` (words in about 95% of notes) are skipped:
they cannot move a note across the threshold and cost the most to accumulate.
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


def term_weight(
    document_frequency: int,
    note_count: int,
    prior: float,
    params: ScoringParams = DEFAULT_PARAMS,
    *,
    capped: bool = True,
) -> float:
    """The rarity weight of a term held by ``document_frequency`` of ``note_count`` notes."""
    pseudo = params.prior_notes
    rarity = math.log(
        (note_count + pseudo + 1.0) / (document_frequency + pseudo * prior + 0.5)
    ) / math.log(params.rarity_reference)
    rarity = max(0.0, rarity)
    return min(1.0, rarity) if capped else rarity


def saturation(x: float, params: ScoringParams = DEFAULT_PARAMS) -> float:
    """BM25 term-frequency saturation of a field-weighted frequency ``x`` (0 .. k1 + 1)."""
    return x * (params.k1 + 1.0) / (x + params.k1) if x > 0 else 0.0


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

    Fed with the summary + tags terms of two notes (stemmed, stop words removed), values from
    :data:`LIKELY_DUPLICATE` (0.6) up mean "the same topic": e.g. "Pricing cards use fills, not
    borders" and "Pricing cards: fill instead of borders" score 0.89, while two notes sharing
    one word of four score about 0.3.
    """
    a = first if isinstance(first, set | frozenset) else set(first)
    b = second if isinstance(second, set | frozenset) else set(second)
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))
