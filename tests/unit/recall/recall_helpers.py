"""Helpers for the recall tests: the calibration set and synthetic filler notes."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from pathlib import Path

from oharness.notes.format import Note
from oharness.recall.words import COMMON_WORDS, ENGLISH_STOP, VERY_COMMON_WORDS
from oharness.types import Scope

DATA = Path(__file__).resolve().parents[2] / "data" / "recall"
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


@dataclass(frozen=True)
class Calibration:
    notes: list[tuple[Scope, Note]]
    attach: list[tuple[str, str]]  # message, id of the note it must attach
    nothing: list[str]  # messages that must attach no note


def load_calibration() -> Calibration:
    """The calibration set of ``tests/data/recall/calibration.json``."""
    raw = json.loads((DATA / "calibration.json").read_text(encoding="utf-8"))
    notes: list[tuple[Scope, Note]] = [
        (
            "user" if item["scope"] == "user" else "project",
            Note(item["id"], item["summary"], item["body"], tuple(item["tags"]), item["type"]),
        )
        for item in raw["notes"]
    ]
    attach = [(item["message"], item["note"]) for item in raw["attach"]]
    return Calibration(notes, attach, list(raw["nothing"]))


def synthetic_notes(count: int, seed: int = 5) -> list[tuple[Scope, Note]]:
    """Filler notes: Zipf-distributed words, real English at the head, pseudo-words after.

    Summaries and tags name a topic with tail words plus a few everyday ones; bodies of 40-400
    words are drawn from the whole vocabulary, so everyday words are everywhere.
    """
    rng = random.Random(seed)
    head = sorted(ENGLISH_STOP) + sorted(VERY_COMMON_WORDS) + sorted(COMMON_WORDS)
    tail: list[str] = []
    seen = set(head)
    while len(tail) < 30_000:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            tail.append(word)
    vocabulary = head + tail
    weights = list(itertools.accumulate(1.0 / rank for rank in range(1, len(vocabulary) + 1)))
    tail_weights = list(
        itertools.accumulate(1.0 / rank for rank in range(len(head) + 1, len(vocabulary) + 1))
    )
    notes: list[tuple[Scope, Note]] = []
    for number in range(count):
        topic = rng.choices(tail, cum_weights=tail_weights, k=rng.randint(3, 7))
        glue = rng.choices(vocabulary, cum_weights=weights, k=rng.randint(0, 3))
        body = rng.choices(vocabulary, cum_weights=weights, k=rng.randint(40, 400))
        tags = tuple(
            dict.fromkeys(rng.choices(tail, cum_weights=tail_weights, k=rng.randint(1, 3)))
        )
        scope: Scope = "project" if number % 2 else "user"
        note_id = f"synthetic-{number:05d}"
        notes.append((scope, Note(note_id, " ".join(topic + glue), " ".join(body), tags)))
    return notes
