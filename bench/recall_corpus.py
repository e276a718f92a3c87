"""Seeded synthetic notes and messages for the recall benchmarks.

Words are drawn from a Zipf-distributed vocabulary (exponent 1.0), as in real text: the head
is real English (function words, then everyday words), the long tail is pronounceable
pseudo-words, one in ten of them an identifier (``kelo-trabi``, ``vinoMaster``,
``sapo_rune.py``) so the tokeniser's identifier path is exercised too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from oharness.notes.format import Note
from oharness.recall.words import COMMON_WORDS, ENGLISH_STOP, VERY_COMMON_WORDS
from oharness.types import Scope

_FUNCTION_WORDS = sorted(word for word in ENGLISH_STOP if len(word) > 2)
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


@dataclass(frozen=True)
class Corpus:
    """Notes with their scopes, and the vocabulary they were drawn from (rank order)."""

    notes: list[tuple[Scope, Note]]
    vocabulary: list[str]


def vocabulary(size: int, seed: int) -> list[str]:
    """English head then pseudo-words, ``size`` words in rank order."""
    rng = random.Random(seed)
    words = list(dict.fromkeys([*_FUNCTION_WORDS, *sorted(VERY_COMMON_WORDS)]))
    words += sorted(COMMON_WORDS - set(words))
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word in seen:
            continue
        seen.add(word)
        roll = rng.random()
        if roll < 0.04:
            word = f"{word}-{rng.choice(_SYLLABLES)}{rng.choice(_SYLLABLES)}"
        elif roll < 0.07:
            word = f"{word}{rng.choice(_SYLLABLES).capitalize()}{rng.choice(_SYLLABLES)}"
        elif roll < 0.10:
            word = f"{word}_{rng.choice(_SYLLABLES)}.py"
        words.append(word)
    return words


class ZipfSampler:
    """Samples word ranks with probability proportional to ``1 / rank``."""

    def __init__(self, size: int, seed: int) -> None:
        weights = 1.0 / np.arange(1, size + 1, dtype=np.float64)
        self._cdf = np.cumsum(weights / weights.sum())
        self._rng = np.random.default_rng(seed)

    def ranks(self, count: int, lowest: int = 0) -> list[int]:
        """``count`` ranks, each at least ``lowest`` (0-based)."""
        floor = self._cdf[lowest - 1] if lowest else 0.0
        draws = self._rng.uniform(floor, 1.0, count)
        ranks = np.searchsorted(self._cdf, draws).clip(0, len(self._cdf) - 1)
        return [int(rank) for rank in ranks]


def synthetic_corpus(
    count: int = 10_000, seed: int = 7, vocabulary_size: int = 50_000, id_prefix: str = "n"
) -> Corpus:
    """``count`` notes, half per scope; bodies of 40-400 words."""
    words = vocabulary(vocabulary_size, seed)
    sampler = ZipfSampler(len(words), seed)
    rng = random.Random(seed)
    head = english_head_size()
    notes: list[tuple[Scope, Note]] = []
    for number in range(count):
        scope: Scope = "project" if number < count // 2 else "user"
        summary = " ".join(words[r] for r in _summary_ranks(sampler, rng, head))
        tags = tuple(dict.fromkeys(words[r] for r in sampler.ranks(rng.randint(1, 3), head)))
        body_ranks = sampler.ranks(rng.randint(40, 400))
        sentences = []
        for start in range(0, len(body_ranks), 14):
            sentence = " ".join(words[r] for r in body_ranks[start : start + 14])
            sentences.append(sentence[:1].upper() + sentence[1:] + ".")
        note_id = f"{id_prefix}{number:05d}-{rng.getrandbits(12):03x}"
        summary_text = summary[:1].upper() + summary[1:]
        notes.append((scope, Note(note_id, summary_text[:200], " ".join(sentences), tags)))
    return Corpus(notes, words)


def english_head_size() -> int:
    """How many ranks at the top of :func:`vocabulary` are real English words."""
    return len(set(_FUNCTION_WORDS) | VERY_COMMON_WORDS | COMMON_WORDS)


def _summary_ranks(sampler: ZipfSampler, rng: random.Random, head: int) -> list[int]:
    """Summaries name their topic: mostly topical words, some glue and everyday words."""
    ranks = sampler.ranks(rng.randint(3, 8), lowest=head)
    for _ in range(rng.randint(0, 3)):
        ranks.insert(
            rng.randrange(len(ranks) + 1),
            sampler.ranks(1)[0] if rng.random() < 0.6 else rng.randrange(len(_FUNCTION_WORDS)),
        )
    return ranks


def synthetic_messages(corpus: Corpus, count: int, seed: int = 11) -> list[str]:
    """Messages of 5-60 words: a third about a note, a third chit-chat, a third anything."""
    sampler = ZipfSampler(len(corpus.vocabulary), seed)
    rng = random.Random(seed)
    words = corpus.vocabulary
    head = english_head_size()
    messages: list[str] = []
    for number in range(count):
        kind = number % 3
        filler = [words[r] for r in sampler.ranks(rng.randint(5, 40))]
        if kind == 0:
            _, note = rng.choice(corpus.notes)
            topic = note.summary.split()
            filler[:0] = rng.sample(topic, min(len(topic), rng.randint(2, 4)))
        elif kind == 1:
            filler = [words[r] for r in sampler.ranks(rng.randint(5, 20)) if r < head] or filler
        else:
            filler += [words[r] for r in sampler.ranks(rng.randint(0, 20))]
        messages.append(" ".join(filler))
    return messages
