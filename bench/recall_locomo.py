"""LoCoMo for the recall benchmarks: turns as notes, questions with corrected evidence, metrics.

Each dialogue turn of a conversation is a note (summary = the turn's first sentence, tags =
speaker and session date, body = the turn; a shared image's caption is part of the turn; the
note replies to the turn before it in its session, as a ``[[link]]`` to it at the end of its
body). Questions of categories 1-4 keep their evidence, with the audit's corrected evidence
applied (``locomo-audit-errors.json``).

The reply link is the one liberty taken with the specification's mapping: a ``[[link]]`` is a
real note field (a note may link to the note it answers or details), but none of the
importers writes one from a transcript today, so ``recall_quality.py`` also reports search
without the links ("no reply links").

Metrics, per question and then averaged:

- ``R@k``: the share of the question's evidence turns in the top k;
- ``Hit@k``: 1 when at least one evidence turn is in the top k (what the spec's "turn R@10"
  of a plain BM25 counts);
- ``MRR``: 1 / rank of the first evidence turn (0 when none is ranked).

Conversations are split in two halves by their position in the file: even (0, 2, 4, ...) is
the tuned half - anything with a constant was chosen on it - and odd is held out.

The data is for local evaluation only and is never copied into the repository.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oharness.notes.format import Note
from oharness.recall.tokenize import Tokenizer

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
CUTOFFS = (1, 5, 10)
METRICS = ("R@1", "R@5", "R@10", "Hit@1", "Hit@5", "Hit@10", "MRR")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")

Ranker = Callable[[str], list[str]]


@dataclass
class Turn:
    dia_id: str
    speaker: str
    date: str
    text: str
    replies_to: str | None = None


@dataclass
class Question:
    conversation: int
    text: str
    category: int
    evidence: set[str]


@dataclass
class Scores:
    """Per-question values of every metric of :data:`METRICS`."""

    values: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METRICS})

    def add(self, ranking: Sequence[str], evidence: set[str]) -> None:
        for k in CUTOFFS:
            found = evidence & set(ranking[:k])
            self.values[f"R@{k}"].append(len(found) / len(evidence))
            self.values[f"Hit@{k}"].append(1.0 if found else 0.0)
        first = next((rank for rank, turn in enumerate(ranking, 1) if turn in evidence), 0)
        self.values["MRR"].append(1.0 / first if first else 0.0)

    def __len__(self) -> int:
        return len(self.values["MRR"])

    def mean(self, metric: str) -> float:
        return sum(self.values[metric]) / max(1, len(self))

    def row(self) -> list[float]:
        return [self.mean(metric) for metric in METRICS]


def load(data: Path) -> tuple[list[list[Turn]], list[Question], int]:
    """Conversations as turns, questions with corrected evidence, and how many questions were
    skipped for lack of usable evidence."""
    conversations = json.loads((data / "locomo10.json").read_text(encoding="utf-8"))
    audit = json.loads((data / "locomo-audit-errors.json").read_text(encoding="utf-8"))
    corrected = {item["question_id"]: item["correct_evidence"] for item in audit}
    all_turns: list[list[Turn]] = []
    questions: list[Question] = []
    skipped = 0
    for number, conversation in enumerate(conversations):
        turns = _turns(conversation["conversation"])
        known = {turn.dia_id for turn in turns}
        all_turns.append(turns)
        for index, qa in enumerate(conversation["qa"]):
            if qa.get("category") not in CATEGORIES:
                continue
            cited = corrected.get(f"locomo_{number}_qa{index}", qa.get("evidence", []))
            evidence = {ref for ref in _evidence(cited) if ref in known}
            if not evidence:
                skipped += 1
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
        previous: str | None = None
        for turn in value:
            text = str(turn.get("text", ""))
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], turn["speaker"], date, text, previous))
            previous = turn["dia_id"]
    return turns


def _evidence(cited: Sequence[str]) -> set[str]:
    refs: set[str] = set()
    for item in cited:
        refs.update(f"D{a}:{b}" for a, b in _EVIDENCE.findall(str(item)))
    return refs


def note_id(dia_id: str) -> str:
    return "turn-" + dia_id.replace(":", "-").lower()


def dia_id(identifier: str) -> str:
    return identifier.removeprefix("turn-").upper().replace("-", ":")


def note_of(turn: Turn, *, replies: bool = False) -> Note:
    """A turn as a note; with ``replies`` its body links to the turn it answers."""
    first = _SENTENCE_END.split(turn.text.strip(), maxsplit=1)[0][:200] or turn.speaker
    body = turn.text
    if replies and turn.replies_to:
        body += f"\n[[{note_id(turn.replies_to)}]]"
    return Note(note_id(turn.dia_id), first, body, (turn.speaker, turn.date))


def halves(questions: list[Question]) -> dict[str, list[Question]]:
    """All questions, the tuned half (even conversations) and the held-out half (odd)."""
    return {
        "all": questions,
        "tuned": [q for q in questions if q.conversation % 2 == 0],
        "held-out": [q for q in questions if q.conversation % 2 == 1],
    }


def evaluate(
    turns: list[list[Turn]], questions: list[Question], build: Callable[[list[Turn]], Ranker]
) -> dict[int | str, Scores]:
    """Scores overall and per category."""
    needed = {question.conversation for question in questions}
    rankers = {number: build(turns[number]) for number in needed}
    results: dict[int | str, Scores] = {"all": Scores(), **{c: Scores() for c in CATEGORIES}}
    for question in questions:
        ranking = rankers[question.conversation](question.text)
        results["all"].add(ranking, question.evidence)
        results[question.category].add(ranking, question.evidence)
    return results


@dataclass(frozen=True)
class FieldedBM25:
    """A fair baseline: BM25F over text, speaker and date with our tokeniser (stems, stop words).

    ``b`` normalises the text field by length; speaker and date are short fields weighted by
    ``field_weight`` (no length normalisation). Plain Robertson IDF, k1 = 1.2.
    """

    b: float = 0.75
    field_weight: float = 1.0
    k1: float = 1.2

    def build(self, turns: list[Turn], tokenizer: Tokenizer) -> Ranker:
        texts = [tokenizer.counts(turn.text) for turn in turns]
        extras = [tokenizer.counts(f"{turn.speaker}\n{turn.date}") for turn in turns]
        lengths = [sum(counts.values()) for counts in texts]
        average = sum(lengths) / max(1, len(lengths)) or 1.0
        frequency: Counter[str] = Counter()
        for text, extra in zip(texts, extras, strict=True):
            frequency.update(set(text) | set(extra))
        count = len(turns)
        idf = {t: math.log(1 + (count - df + 0.5) / (df + 0.5)) for t, df in frequency.items()}
        norms = [1.0 - self.b + self.b * length / average for length in lengths]

        def rank(query: str) -> list[str]:
            terms = [group[0] for group in tokenizer.query_terms(query)]
            scored = []
            for position, (text, extra) in enumerate(zip(texts, extras, strict=True)):
                score = 0.0
                for term in terms:
                    x = text.get(term, 0) / norms[position] + self.field_weight * extra.get(term, 0)
                    if x:
                        score += idf[term] * x * (self.k1 + 1) / (x + self.k1)
                if score > 0:
                    scored.append((-score, position))
            scored.sort()
            return [turns[position].dia_id for _, position in scored]

        return rank
