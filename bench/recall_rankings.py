"""What recall and search answer on the benchmark corpus and the calibration sets, as one record.

Used by ``recall_cpu.py`` to check that a faster version answers exactly as the version it is
compared with: every attached note, in order, with its score to the last bit, and the first
ten search results. The cases:

- the 10,000 synthetic notes of ``recall_corpus.py`` with the benchmark's 1,000 messages,
  recalled with the per-term tables and topic memo empty (a single pass) and again warm;
- the same index after edits (notes replaced, removed and added back), so the paths that
  keep the index in step are compared too;
- the calibration set of ``tests/data/recall/`` with its "must attach", "must attach nothing"
  and chit-chat messages, alone and among 50, 500 and 5,000 realistic filler notes;
- a message excluding its own best note, and ``related`` for the calibration notes.

    python bench/recall_rankings.py [--quick] > rankings.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "unit" / "recall"))

from recall_corpus import synthetic_corpus, synthetic_messages  # noqa: E402
from recall_helpers import load_calibration, load_chitchat, realistic_notes  # noqa: E402

from oharness.notes.format import Note  # noqa: E402
from oharness.recall.index import RecallIndex  # noqa: E402


def _hits(found: Iterable[Any]) -> list[list[Any]]:
    return [[hit.scope, hit.id, float(hit.score).hex()] for hit in found]


def forget(index: object) -> None:
    """Empty what recall keeps between messages (versions without it keep nothing)."""
    postings = getattr(index, "_postings", None)
    if hasattr(postings, "version"):
        postings.version += 1  # type: ignore[union-attr]
    for name in ("_judge", "_topics"):  # the gate's memo by term id, the topic weights
        kept = getattr(index, name, None)
        if hasattr(kept, "reset"):
            kept.reset()  # type: ignore[union-attr]
    memo = getattr(index, "_memo", None)  # the term weights by document frequency
    if memo is not None:
        memo.clear()


def _corpus_cases(notes: int, message_count: int) -> dict[str, Any]:
    corpus = synthetic_corpus(notes, seed=7)
    messages = synthetic_messages(corpus, message_count, seed=8)
    index = RecallIndex()
    index.add_many(corpus.notes)
    forget(index)
    cases: dict[str, Any] = {"single pass": [_hits(index.recall(m)) for m in messages]}
    cases["warm"] = [_hits(index.recall(m)) for m in messages]
    cases["search"] = [_hits(index.search(m, 10)) for m in messages[:100]]
    excluded = []
    for message in messages[:200]:
        first = index.recall(message)
        excluded.append(_hits(index.recall(message, exclude=[first[0].key] if first else [])))
    cases["excluded"] = excluded
    for number in range(0, len(corpus.notes), max(1, len(corpus.notes) // 40)):
        scope, note = corpus.notes[number]
        if number % 3 == 0:
            index.remove(scope, note.id)
        else:
            index.add(scope, note.with_changes(summary=f"{note.summary} edited{number}"))
    cases["after edits"] = [_hits(index.recall(m)) for m in messages[:300]]
    index.add_many(corpus.notes)
    cases["edits undone"] = [_hits(index.recall(m)) for m in messages[:300]]
    return cases


def _calibration_cases(fillers: Iterable[int]) -> dict[str, Any]:
    calibration = load_calibration()
    messages = [m for m, _ in calibration.attach] + calibration.nothing + load_chitchat()
    cases: dict[str, Any] = {}
    for filler in fillers:
        index = RecallIndex()
        index.add_many(realistic_notes(filler))
        index.add_many(calibration.notes)
        cases[f"calibration +{filler}"] = [_hits(index.recall(m)) for m in messages]
        if filler == 0:
            cases["related"] = [
                _hits(index.related(note, scope=scope)) for scope, note in calibration.notes
            ]
            index.add("project", Note("cards-3fa", "Pricing cards use fills, not borders", "x"))
            cases["one added"] = [_hits(index.recall(m)) for m in messages]
    return cases


def rankings(quick: bool) -> dict[str, Any]:
    """Every case of the module docstring (smaller with ``quick``)."""
    notes, message_count = (1_000, 200) if quick else (10_000, 1_000)
    fillers = (0, 50) if quick else (0, 50, 500, 5_000)
    return {**_corpus_cases(notes, message_count), **_calibration_cases(fillers)}


def digest(cases: dict[str, Any]) -> dict[str, str]:
    """A short fingerprint per case."""
    return {
        name: hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]
        for name, value in cases.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    json.dump(rankings(args.quick), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
