"""Retrieval quality on LoCoMo (spec 03.3): the search path against a plain BM25 baseline.

Each dialogue turn of a conversation is a note (summary = the turn's first sentence, tags =
speaker and session date, body = the turn; a shared image's caption is part of the turn); each
question of categories 1-4 is a query ranked by ``RecallIndex.search`` over its conversation's
turns (no gate, no threshold). Evidence is the dataset's, with the audit's corrected evidence
applied (``locomo-audit-errors.json``). Reported per system: R@k = share of a question's
evidence turns found in the top k, averaged over questions; MRR = mean of 1 / rank of the
first evidence turn (0 when none is ranked); Hit@10 = share of questions with at least one
evidence turn in the top 10.

The baseline is a plain BM25 (k1 1.2, b 0.75) over the same turns as one field: lower-cased
``\\w+`` words, no stemming, no stop words, no field weights; a second row drops English stop
words, for context.

The data is for local evaluation only and is never copied into the repository::

    python bench/recall_quality.py [--data ../shared/data/locomo] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex
from oharness.recall.words import ENGLISH_STOP

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
CUTOFFS = (1, 5, 10)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
_WORD = re.compile(r"\w+")

Ranker = Callable[[str], list[str]]


@dataclass
class Turn:
    dia_id: str
    speaker: str
    date: str
    text: str


@dataclass
class Question:
    conversation: int
    text: str
    category: int
    evidence: set[str]


@dataclass
class Scores:
    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in CUTOFFS})
    reciprocal_ranks: list[float] = field(default_factory=list)
    hits: list[float] = field(default_factory=list)  # any evidence turn in the top 10

    def add(self, ranking: Sequence[str], evidence: set[str]) -> None:
        for k in CUTOFFS:
            self.recall[k].append(len(evidence & set(ranking[:k])) / len(evidence))
        self.hits.append(1.0 if evidence & set(ranking[:10]) else 0.0)
        first = next((rank for rank, turn in enumerate(ranking, 1) if turn in evidence), 0)
        self.reciprocal_ranks.append(1.0 / first if first else 0.0)

    def row(self) -> list[float]:
        count = max(1, len(self.reciprocal_ranks))
        recalls = [sum(self.recall[k]) / count for k in CUTOFFS]
        return [*recalls, sum(self.reciprocal_ranks) / count, sum(self.hits) / count]


def load(data: Path) -> tuple[list[list[Turn]], list[Question], list[int]]:
    """Conversations as turns, questions with corrected evidence, and the conversations of
    questions skipped for lack of usable evidence."""
    conversations = json.loads((data / "locomo10.json").read_text(encoding="utf-8"))
    audit = json.loads((data / "locomo-audit-errors.json").read_text(encoding="utf-8"))
    corrected = {item["question_id"]: item["correct_evidence"] for item in audit}
    all_turns: list[list[Turn]] = []
    questions: list[Question] = []
    skipped: list[int] = []
    for number, conversation in enumerate(conversations):
        turns = list(_turns(conversation["conversation"]))
        known = {turn.dia_id for turn in turns}
        all_turns.append(turns)
        for index, qa in enumerate(conversation["qa"]):
            if qa.get("category") not in CATEGORIES:
                continue
            cited = corrected.get(f"locomo_{number}_qa{index}", qa.get("evidence", []))
            evidence = {ref for ref in _evidence(cited) if ref in known}
            if not evidence:
                skipped.append(number)
                continue
            questions.append(Question(number, qa["question"], qa["category"], evidence))
    return all_turns, questions, skipped


def _turns(conversation: dict[str, Any]) -> list[Turn]:
    turns: list[Turn] = []
    for key, value in conversation.items():
        if not (key.startswith("session_") and isinstance(value, list)):
            continue
        stamp = str(conversation.get(f"{key}_date_time", ""))
        date = stamp.split(" on ", 1)[-1].replace(",", "")
        for turn in value:
            text = str(turn.get("text", ""))
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], turn["speaker"], date, text))
    return turns


def _evidence(cited: Sequence[str]) -> set[str]:
    refs: set[str] = set()
    for item in cited:
        refs.update(f"D{a}:{b}" for a, b in _EVIDENCE.findall(str(item)))
    return refs


def note_of(turn: Turn) -> Note:
    """A turn as a note: first sentence as summary, speaker and date as tags."""
    first = _SENTENCE_END.split(turn.text.strip(), maxsplit=1)[0][:200] or turn.speaker
    note_id = turn.dia_id.replace(":", "-")
    return Note(note_id, first, turn.text, (turn.speaker, turn.date))


def search_ranker(turns: list[Turn], limit: int, expand: bool = True) -> Ranker:
    index = RecallIndex()
    index.add_many(("project", note_of(turn)) for turn in turns)

    def rank(query: str) -> list[str]:
        return [hit.id.replace("-", ":") for hit in index.search(query, limit, expand=expand)]

    return rank


def bm25_ranker(
    turns: list[Turn],
    limit: int,
    k1: float = 1.2,
    b: float = 0.75,
    stop: frozenset[str] = frozenset(),
) -> Ranker:
    def words(text: str) -> list[str]:
        return [word for word in _WORD.findall(text.lower()) if word not in stop]

    documents = [Counter(words(turn.text)) for turn in turns]
    lengths = [sum(document.values()) for document in documents]
    average = sum(lengths) / max(1, len(lengths))
    frequency: Counter[str] = Counter()
    for document in documents:
        frequency.update(document.keys())
    count = len(documents)
    idf = {t: math.log(1 + (count - df + 0.5) / (df + 0.5)) for t, df in frequency.items()}

    def rank(query: str) -> list[str]:
        terms = set(words(query))
        scored = []
        for position, document in enumerate(documents):
            norm = k1 * (1 - b + b * lengths[position] / average)
            score = sum(
                idf[t] * document[t] * (k1 + 1) / (document[t] + norm)
                for t in terms
                if t in document
            )
            if score > 0:
                scored.append((-score, position))
        scored.sort()
        return [turns[position].dia_id for _, position in scored[:limit]]

    return rank


def evaluate(
    turns: list[list[Turn]], questions: list[Question], build: Callable[[list[Turn], int], Ranker]
) -> tuple[dict[int | str, Scores], float]:
    """Scores overall and per category, and mean milliseconds per query."""
    rankers = [build(conversation, len(conversation)) for conversation in turns]
    results: dict[int | str, Scores] = {"all": Scores(), **{c: Scores() for c in CATEGORIES}}
    started = time.perf_counter()
    for question in questions:
        ranking = rankers[question.conversation](question.text)
        results["all"].add(ranking, question.evidence)
        results[question.category].add(ranking, question.evidence)
    elapsed = (time.perf_counter() - started) * 1000 / max(1, len(questions))
    return results, elapsed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo folder")
    parser.add_argument("--quick", action="store_true", help="first two conversations only")
    args = parser.parse_args(argv)
    if not (args.data / "locomo10.json").is_file():
        print(f"LoCoMo data not found in {args.data}: skipping (pass --data PATH)")
        return 0
    turns, questions, skipped = load(args.data)
    if args.quick:
        turns = turns[:2]
        questions = [q for q in questions if q.conversation < 2]
        skipped = [number for number in skipped if number < 2]
    systems: dict[str, Callable[[list[Turn], int], Ranker]] = {
        "oharness search": search_ranker,
        "  without feedback": lambda turns, limit: search_ranker(turns, limit, expand=False),
        "plain BM25": bm25_ranker,
        "BM25, stop words": lambda turns, limit: bm25_ranker(turns, limit, stop=ENGLISH_STOP),
    }
    print(
        f"LoCoMo: {len(turns)} conversations, {sum(map(len, turns))} turns, "
        f"{len(questions)} questions (categories 1-4, audit-corrected evidence; "
        f"{len(skipped)} without usable evidence skipped)\n"
    )
    header = f"{'system':<18} {'category':<13} {'n':>5} " + " ".join(
        f"{name:>6}" for name in ("R@1", "R@5", "R@10", "MRR", "Hit@10")
    )
    print(header)
    print("-" * len(header))
    for name, build in systems.items():
        results, per_query = evaluate(turns, questions, build)
        for category, scores in results.items():
            label = "all" if category == "all" else f"{category} {CATEGORIES[int(category)]}"
            values = " ".join(f"{value:6.3f}" for value in scores.row())
            print(f"{name:<18} {label:<13} {len(scores.reciprocal_ranks):>5} {values}")
        print(f"{name:<18} {'':<13} {per_query:.2f} ms per query\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
