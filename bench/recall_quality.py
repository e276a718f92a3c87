"""Recall quality (spec 03.3): LoCoMo search against a fair BM25, the per-message path, chit-chat.

1. Search. Each LoCoMo turn is a note (see ``recall_locomo.py``), each question of categories
   1-4 a query ranked by ``RecallIndex.search`` over its conversation's turns (also without
   the reply links, to show what they add). The baseline in
   the same run is a fair BM25F: our tokeniser (Snowball stems, stop words), speaker and date
   as fields, ``b`` and the field weight tuned on the tuned half. R@k, Hit@k and MRR per
   category, and apart for the tuned half (even conversations) and the held-out half (odd).
2. Per message. Each question as the user message through ``RecallIndex.recall`` with the
   default settings (gate, ``minScore``, ``perTurn``): the share of questions with an evidence
   turn among the attached notes, the mean number attached, and their precision.
3. Chit-chat and calibration. The ordinary messages of a coding session
   (``tests/data/recall/chitchat.json``) and the labelled messages of the calibration set
   (``tests/data/recall/calibration.json``) against its notes alone and among realistic
   filler notes: the share attaching nothing, and the share of "must attach" messages that do.

The LoCoMo data is for local evaluation only and is never copied into the repository::

    python bench/recall_quality.py [--data ../shared/data/locomo] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "recall"))

from recall_helpers import load_calibration, load_chitchat, realistic_notes
from recall_locomo import (
    CATEGORIES,
    DEFAULT_DATA,
    METRICS,
    FieldedBM25,
    Question,
    Ranker,
    Scores,
    Turn,
    dia_id,
    evaluate,
    halves,
    load,
    note_of,
)

from oharness.recall.index import RecallIndex
from oharness.recall.tokenize import Tokenizer

FILLER_SIZES = (0, 50, 500, 5_000, 10_000)
_B_GRID = (0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9)
_FIELD_GRID = (0.5, 1.0, 2.0)


def search_ranker(turns: list[Turn], *, replies: bool = True) -> Ranker:
    index = RecallIndex()
    index.add_many(("project", note_of(turn, replies=replies)) for turn in turns)

    def rank(query: str) -> list[str]:
        return [dia_id(hit.id) for hit in index.search(query, len(turns))]

    return rank


def tune_bm25(turns: list[list[Turn]], questions: list[Question]) -> FieldedBM25:
    """The BM25F constants with the best Hit@10 + MRR on the tuned half."""
    tokenizer = Tokenizer()
    tuned = halves(questions)["tuned"]
    best: tuple[float, FieldedBM25] | None = None
    for b, weight in itertools.product(_B_GRID, _FIELD_GRID):
        model = FieldedBM25(b, weight)
        overall = evaluate(turns, tuned, partial(model.build, tokenizer=tokenizer))["all"]
        value = overall.mean("Hit@10") + overall.mean("MRR")
        if best is None or value > best[0]:
            best = (value, model)
    assert best is not None
    return best[1]


def print_search(turns: list[list[Turn]], questions: list[Question], quick: bool) -> None:
    model = FieldedBM25() if quick else tune_bm25(turns, questions)
    tokenizer = Tokenizer()
    systems: dict[str, Callable[[list[Turn]], Ranker]] = {
        "oharness search": search_ranker,
        "  no reply links": lambda conv: search_ranker(conv, replies=False),
        f"BM25F b={model.b} f={model.field_weight}": lambda conv: model.build(conv, tokenizer),
    }
    header = f"{'system':<24} {'questions':<14} {'n':>5} " + " ".join(f"{m:>6}" for m in METRICS)
    print(header)
    print("-" * len(header))
    for name, build in systems.items():
        started = time.perf_counter()
        for label, subset in halves(questions).items():
            results = evaluate(turns, subset, build)
            rows: list[tuple[str, Scores]] = [(label, results["all"])]
            if label == "all":
                rows += [(f"{c} {CATEGORIES[c]}", results[c]) for c in CATEGORIES]
            for row_label, scores in rows:
                values = " ".join(f"{value:6.3f}" for value in scores.row())
                print(f"{name:<24} {row_label:<14} {len(scores):>5} {values}")
        elapsed = time.perf_counter() - started
        print(f"{name:<24} {elapsed:.1f} s for the three passes\n")


def print_per_message(turns: list[list[Turn]], questions: list[Question]) -> None:
    """Per-message recall beside Okapi BM25 given the same number of notes per question."""
    print("Per-message recall (each question as the user message; default settings)")
    print("BM25: Okapi (k1 1.2, b 0.75, speaker and date as words), the same number of notes")
    columns = ("evidence", "attached", "precision", "none", "BM25 evid", "margin")
    header = f"{'questions':<10} {'n':>5} " + " ".join(f"{c:>9}" for c in columns)
    print(header)
    print("-" * len(header))
    tokenizer = Tokenizer()
    okapi = FieldedBM25()
    for label, subset in halves(questions).items():
        indexes: dict[int, RecallIndex] = {}
        rankers: dict[int, Ranker] = {}
        found = attached = correct = empty = bm25_found = 0
        for question in subset:
            conversation = question.conversation
            index = indexes.get(conversation)
            if index is None:
                index = indexes[conversation] = RecallIndex()
                index.add_many(("project", note_of(t, replies=True)) for t in turns[conversation])
                rankers[conversation] = okapi.build(turns[conversation], tokenizer)
            ids = {dia_id(hit.id) for hit in index.recall(question.text)}
            hits = len(ids & question.evidence)
            found += hits > 0
            attached += len(ids)
            correct += hits
            empty += not ids
            if ids:
                best = rankers[conversation](question.text)[: len(ids)]
                bm25_found += bool(set(best) & question.evidence)
        count = max(1, len(subset))
        print(
            f"{label:<10} {len(subset):>5} {found / count:9.3f} {attached / count:9.2f} "
            f"{correct / max(1, attached):9.3f} {empty / count:9.3f} "
            f"{bm25_found / count:9.3f} {(found - bm25_found) / count:+9.3f}"
        )
    print()


def print_chitchat(quick: bool) -> None:
    calibration = load_calibration()
    chitchat = load_chitchat()
    sizes = FILLER_SIZES[:3] if quick else FILLER_SIZES
    print(
        f"Chit-chat ({len(chitchat)} messages) and calibration ({len(calibration.attach)} must "
        f"attach, {len(calibration.nothing)} must attach nothing) over "
        f"{len(calibration.notes)} calibration notes plus filler"
    )
    header = f"{'filler':>7} {'chit-chat none':>15} {'must-nothing ok':>16} {'must-attach ok':>15}"
    print(header)
    print("-" * len(header))
    for size in sizes:
        index = RecallIndex()
        index.add_many(realistic_notes(size))
        index.add_many(calibration.notes)
        quiet = sum(1 for message in chitchat if not index.recall(message))
        nothing = sum(1 for message in calibration.nothing if not index.recall(message))
        attach = sum(
            1
            for message, note_id in calibration.attach
            if note_id in {hit.id for hit in index.recall(message)}
        )
        print(
            f"{size:>7} {quiet / len(chitchat):15.3f} "
            f"{nothing / max(1, len(calibration.nothing)):16.3f} "
            f"{attach / max(1, len(calibration.attach)):15.3f}"
        )
    print()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo folder")
    parser.add_argument("--quick", action="store_true", help="two conversations, small sizes")
    parser.add_argument("--per-message", action="store_true", help="only per-message on LoCoMo")
    args = parser.parse_args(argv)
    if not args.per_message:
        print_chitchat(args.quick)
    if not (args.data / "locomo10.json").is_file():
        print(f"LoCoMo data not found in {args.data}: LoCoMo skipped (pass --data PATH)")
        return 0
    turns, questions, skipped = load(args.data)
    if args.quick:
        questions = [q for q in questions if q.conversation < 2]
    print(
        f"LoCoMo: {len(turns)} conversations, {sum(map(len, turns))} turns, "
        f"{len(questions)} questions (categories 1-4, audit-corrected evidence; "
        f"{skipped} without usable evidence skipped)\n"
    )
    if not args.per_message:
        print_search(turns, questions, args.quick)
    print_per_message(turns, questions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
