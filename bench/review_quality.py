"""Same-topic quality of the review (spec 05.1) on the planted-duplicates set.

``tests/data/review/planted.json`` holds realistic notes: near-duplicate groups (rewordings,
synonyms carried by tags, groups written in German, French, Spanish, Chinese and Japanese) and
single notes on close but distinct topics. The review's grouping
(:func:`oharness.review.topics.same_topic_groups` over the summary + tag terms of the recall
tokeniser, the similarity behind ``likelyDuplicate``) is scored, and in the same run two
baselines: identical summaries after case folding, and the same grouping over raw lower-cased
words (no stemming, no stop words, no CJK pairs).

- recall: share of planted groups reported exactly (the same notes, no more, no fewer);
- false-group rate: share of reported groups that mix notes of different planted groups or
  include a single note.

A threshold sweep shows how the chosen threshold was tuned::

    python bench/review_quality.py [--quick]

Targets: recall >= 95 %, false groups <= 5 % (exit status 1 when missed).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex
from oharness.review.topics import SAME_TOPIC, same_topic_groups
from oharness.settings import RecallSettings

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "review" / "planted.json"
SWEEP = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)
_WORD = re.compile(r"\w+")


def load(path: Path = DATA) -> tuple[list[Note], list[str | None], tuple[str, ...]]:
    """The planted notes, each note's planted group, and the languages to tokenise with."""
    data = json.loads(path.read_text(encoding="utf-8"))
    notes = [
        Note(id=n["id"], summary=n["summary"], body=n["body"], tags=tuple(n["tags"]))
        for n in data["notes"]
    ]
    return notes, [n["group"] for n in data["notes"]], tuple(data["languages"])


def score(groups: Sequence[Sequence[int]], planted: Sequence[str | None]) -> tuple[float, float]:
    """(recall of planted groups, false-group rate) of reported groups of note indices."""
    truth: dict[str, set[int]] = {}
    for index, name in enumerate(planted):
        if name is not None:
            truth.setdefault(name, set()).add(index)
    reported = [set(group) for group in groups]
    found = sum(1 for members in truth.values() if members in reported)
    false = sum(
        1
        for group in reported
        if len({planted[i] for i in group}) != 1 or planted[next(iter(group))] is None
    )
    return found / len(truth), (false / len(reported) if reported else 0.0)


def exact_summaries(notes: Sequence[Note]) -> list[list[int]]:
    by_summary: dict[str, list[int]] = {}
    for index, note in enumerate(notes):
        by_summary.setdefault(note.summary.casefold().strip(), []).append(index)
    return [group for group in by_summary.values() if len(group) > 1]


def raw_terms(note: Note) -> frozenset[str]:
    return frozenset(_WORD.findall((note.summary + " " + " ".join(note.tags)).casefold()))


def review_terms(languages: tuple[str, ...]) -> Callable[[Note], frozenset[str]]:
    index = RecallIndex.from_settings(RecallSettings(languages=languages))
    return index.summary_terms


def evaluate(threshold: float, terms: Sequence[frozenset[str]]) -> list[list[int]]:
    return [list(group.members) for group in same_topic_groups(terms, threshold)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="no threshold sweep")
    args = parser.parse_args(argv)
    notes, planted, languages = load()
    ours = [review_terms(languages)(note) for note in notes]
    raw = [raw_terms(note) for note in notes]
    groups = sum(1 for name in set(planted) if name is not None)
    print(f"{len(notes)} notes, {groups} planted groups, languages {', '.join(languages)}")
    rows: list[tuple[str, Any, Any]] = [
        ("exact summaries (baseline)", *score(exact_summaries(notes), planted)),
        (f"raw words @ {SAME_TOPIC} (baseline)", *score(evaluate(SAME_TOPIC, raw), planted)),
        (f"review @ {SAME_TOPIC}", *score(evaluate(SAME_TOPIC, ours), planted)),
    ]
    wide = ("english", "german", "french", "spanish")
    many = [review_terms(wide)(note) for note in notes]
    rows.append((f"  same, 4 stemmers @ {SAME_TOPIC}", *score(evaluate(SAME_TOPIC, many), planted)))
    if not args.quick:
        rows.extend((f"  sweep @ {t}", *score(evaluate(t, ours), planted)) for t in SWEEP)
    print(f"{'system':34} {'recall':>8} {'false groups':>13}")
    for name, recall, false in rows:
        print(f"{name:34} {recall:8.1%} {false:13.1%}")
    recall, false = rows[2][1], rows[2][2]
    ok = recall >= 0.95 and false <= 0.05
    print(f"targets (recall >= 95%, false groups <= 5%): {'met' if ok else 'MISSED'}")
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
