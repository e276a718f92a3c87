"""Per-message recall with a semantic second signal beside the lexical score: does it pay?

The semantic signal is the static embedding the ``wordllama`` wheel ships (``l2_supercat``:
a 32,000 x 256 table of Llama 2 token vectors, float16, trained for sentence similarity with
mean pooling; MIT). A text's vector is the mean of its tokens' rows, normalised; the
similarity of a message and a note is the cosine of their vectors. Nothing is downloaded:
the tokeniser and the table are read from the installed wheel (``WordLlama.load`` itself
looks for the shipped tokeniser in ``wordllama/tokenizer/`` while the wheel holds it in
``wordllama/tokenizers/``, and then downloads it from Hugging Face; the cost section shows this).

The combination (:class:`Rule`), on top of ``RecallIndex.recall`` with the default settings:

- *rescue*: a note that passes the gate with ``minScore`` lowered to ``rescue_score`` but not
  at the default is attached when its cosine with the message reaches ``rescue_cosine``
  (a note just under ``minScore`` that means the same thing);
- *shared word*: when nothing is attached, search's best note (it shares a word with the
  message) is attached when its cosine reaches ``shared_cosine``;
- *alone*: when nothing is attached, the note of highest cosine is attached when its cosine
  reaches ``alone_cosine`` and beats the second best by ``alone_margin`` (a note with no
  shared word).

Ablations in the same run: each part alone, and ``minScore`` lowered with no cosine check.

Each note's vector is of its summary and tags, or of its summary, tags and body (a choice
tuned with the thresholds), at 256 dimensions or cut to the first 64 (the table is trained
so its first dimensions stand alone).

Tuning and reporting never share a message. LoCoMo: tuned on the even conversations,
reported on the odd (held-out) half. Developer sets (``recall_developer.py``): two folds by
message position (even, odd; attach and chit-chat messages alike); each fold's messages are
reported with the rule tuned on the other fold (and LoCoMo's tuned half), so every message
is counted once, by a rule that never saw it. Chit-chat at scale (``chitchat.json`` and the
calibration set's "must attach nothing", over the calibration notes and 10,000 realistic
filler notes): the even messages constrain the tuning, the odd ones are reported.

The tuning picks, among rules that attach no more chit-chat than recall alone on the tuning
messages (developer fold, chit-chat at scale) and keep at most 2 notes per LoCoMo question,
the one with the highest must-attach rate plus LoCoMo evidence rate on the tuning messages.

Cost (left out with ``--no-cost``): the imports and memory of ``wordllama`` and of the lean
loader used here, embedding time per note and per message, and the per-message time of the
cosine step at 10,000 notes, beside recall alone.

    python bench/recall_semantic.py [--data ../shared/data/locomo] [--no-cost] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# One message's cosines are one small matrix-vector product: BLAS threads only contend with
# each other (and with other work) on a shared machine. Set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "recall"))

from recall_corpus import synthetic_corpus, synthetic_messages
from recall_developer import KINDS, SETS, NoteSet, OkapiBM25, load_set
from recall_helpers import load_calibration, load_chitchat, realistic_notes
from recall_locomo import DEFAULT_DATA, FieldedBM25, Question, Turn, dia_id, load, note_of

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex
from oharness.recall.tokenize import Tokenizer
from oharness.settings import RecallSettings
from oharness.types import Scope

TOKENIZER_FILE = "tokenizers/l2_supercat_tokenizer_config.json"
WEIGHTS_FILE = "weights/l2_supercat_256.safetensors"
RESCUE_SCORES = (0.6, 0.8, 1.0)
RESCUE_COSINES = (0.2, 0.3, 0.4, 0.5, 0.6)
SHARED_COSINES = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
ALONE_COSINES = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65)
ALONE_MARGINS = (0.0, 0.05, 0.1)
VARIANTS = ((256, "summary+tags"), (256, "whole note"), (64, "summary+tags"), (64, "whole note"))
PER_TURN = 3
MAX_NOTES_PER_QUESTION = 2.0
FILLER = 10_000
MISSING = (
    "recall_semantic.py needs the wordllama package (pip install wordllama): "
    "its wheel holds the embedding this benchmark evaluates"
)

# ---- the embedding ---------------------------------------------------------------------------


class Embedding:
    """wordllama's static embedding, read from the installed wheel: mean of token rows."""

    def __init__(self, dims: int = 256) -> None:
        from tokenizers import Tokenizer as TokenTokenizer

        root = wordllama_root()
        self.tokenizer = TokenTokenizer.from_file(str(root / TOKENIZER_FILE))
        self.table = read_table(root / WEIGHTS_FILE)
        self.dims = dims

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors (float32, ``len(texts)`` x ``dims``); zeros for a text of no token."""
        vectors = np.zeros((len(texts), self.dims), dtype=np.float32)
        encoded = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        for row, encoding in enumerate(encoded):
            if encoding.ids:
                vectors[row] = self.table[encoding.ids, : self.dims].astype(np.float32).mean(0)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: np.ndarray = vectors / np.maximum(norms, 1e-9)
        return unit


def wordllama_root() -> Path:
    """The folder of the installed ``wordllama`` package (found without importing it)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("wordllama")
    return Path(spec.origin).parent


def read_table(path: Path) -> np.ndarray:
    """The embedding table of a one-tensor safetensors file, memory-mapped as float16."""
    with path.open("rb") as file:
        size = int.from_bytes(file.read(8), "little")
        header = json.loads(file.read(size))
    tensor = header["embedding.weight"]
    start, _ = tensor["data_offsets"]
    shape = tuple(tensor["shape"])
    return np.memmap(path, dtype=np.float16, mode="r", offset=8 + size + start, shape=shape)


def note_text(note: Note, variant: str) -> str:
    """What a note's vector is made of."""
    head = f"{note.summary}\n{' '.join(note.tags)}"
    return head if variant == "summary+tags" else f"{head}\n{note.body}"


# ---- what each message offers the rules ------------------------------------------------------


@dataclass(frozen=True)
class Offer:
    """One message: what recall attaches, the notes just under ``minScore`` with their cosine
    (per lowered ``minScore``), search's best note sharing a word that recall did not attach,
    and the two notes of highest cosine, each with its cosine."""

    lexical: tuple[str, ...]
    near: dict[float, tuple[tuple[str, float], ...]]
    shared: tuple[tuple[str, float], ...]
    best: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Rule:
    """How the semantic signal adds notes to what recall attaches (``None``: that part off)."""

    rescue_score: float | None = None
    rescue_cosine: float = 1.0
    shared_cosine: float | None = None
    alone_cosine: float | None = None
    alone_margin: float = 0.0
    dims: int = 256
    variant: str = "summary+tags"

    def attach(self, offer: Offer) -> list[str]:
        """The notes attached for ``offer``'s message under this rule."""
        attached = list(offer.lexical)
        if self.rescue_score is not None:
            for note_id, cosine in offer.near[self.rescue_score]:
                if cosine >= self.rescue_cosine and len(attached) < PER_TURN:
                    attached.append(note_id)
        if self.shared_cosine is not None and not attached and offer.shared:
            note_id, cosine = offer.shared[0]
            if cosine >= self.shared_cosine:
                attached.append(note_id)
        if self.alone_cosine is not None and not attached and offer.best:
            (note_id, first), second = offer.best[0], offer.best[1][1] if len(offer.best) > 1 else 0
            if first >= self.alone_cosine and first - second >= self.alone_margin:
                attached.append(note_id)
        return attached

    def label(self) -> str:
        rescue = (
            f"rescue >= {self.rescue_score} at cos {self.rescue_cosine}"
            if self.rescue_score is not None
            else "no rescue"
        )
        alone = (
            f"alone cos {self.alone_cosine} margin {self.alone_margin}"
            if self.alone_cosine is not None
            else "no alone"
        )
        shared = (
            f"shared word at cos {self.shared_cosine}"
            if self.shared_cosine is not None
            else "no shared"
        )
        return f"{self.dims}d {self.variant}; {rescue}; {shared}; {alone}"


LEXICAL = Rule()


def offers(
    embeddings: dict[int, Embedding],
    notes: Sequence[tuple[Scope, Note]],
    messages: Sequence[str],
) -> list[dict[tuple[int, str], Offer]]:
    """Per message, its offer under each embedding variant (``(dims, variant)``)."""
    index = RecallIndex()
    index.add_many(notes)
    ids = [note.id for _, note in notes]
    position = {note_id: row for row, note_id in enumerate(ids)}
    lexical = [tuple(hit.id for hit in index.recall(message)) for message in messages]
    near: list[dict[float, list[str]]] = []
    for message, attached in zip(messages, lexical, strict=True):
        levels = {}
        for level in RESCUE_SCORES:
            hits = index.recall(message, settings=RecallSettings(min_score=level))
            levels[level] = [hit.id for hit in hits if hit.id not in attached]
        near.append(levels)
    searched = [
        [hit.id for hit in index.search(message, 1) if hit.id not in attached]
        for message, attached in zip(messages, lexical, strict=True)
    ]
    result: list[dict[tuple[int, str], Offer]] = [{} for _ in messages]
    for dims, variant in VARIANTS:
        embedding = embeddings[dims]
        vectors = embedding.embed([note_text(note, variant) for _, note in notes])
        cosines = embedding.embed(messages) @ vectors.T
        for row, offered in enumerate(result):
            values = cosines[row]
            top = np.argsort(-values)[:2]
            offered[dims, variant] = Offer(
                lexical[row],
                {
                    level: tuple((i, float(values[position[i]])) for i in found)
                    for level, found in near[row].items()
                },
                tuple((i, float(values[position[i]])) for i in searched[row]),
                tuple((ids[column], float(values[column])) for column in top),
            )
    return result


def rules() -> list[Rule]:
    """Every rule of the grid, for every embedding variant."""
    grid: list[Rule] = []
    rescues: list[tuple[float | None, float]] = [(None, 1.0)]
    rescues += list(itertools.product(RESCUE_SCORES, RESCUE_COSINES))
    alones: list[tuple[float | None, float]] = [(None, 0.0)]
    alones += list(itertools.product(ALONE_COSINES, ALONE_MARGINS))
    shareds: list[float | None] = [None, *SHARED_COSINES]
    for (dims, variant), (score, cosine), shared, (alone, margin) in itertools.product(
        VARIANTS, rescues, shareds, alones
    ):
        grid.append(Rule(score, cosine, shared, alone, margin, dims, variant))
    return grid


# ---- the messages: developer sets, LoCoMo, chit-chat at scale --------------------------------


@dataclass(frozen=True)
class Probe:
    """One message with what should be attached (nothing for chit-chat) and its offers.

    ``source``: ``developer``, ``locomo`` or ``scale``; ``kind``: a developer kind,
    ``nothing`` (chit-chat), ``question`` (LoCoMo) or ``calibration`` (must attach, at
    scale); ``fold``: 0 or 1 (LoCoMo: 0 for the tuned half, 1 for the held-out half);
    ``bm25``: Okapi BM25's three best notes, for the same-count baseline."""

    source: str
    kind: str
    expected: frozenset[str]
    fold: int
    offers: dict[tuple[int, str], Offer]
    message: str
    bm25: tuple[str, ...] = ()


def developer_probes(embeddings: dict[int, Embedding], names: Sequence[str]) -> list[Probe]:
    """Every message of the developer sets; folds by position among attach and chit-chat."""
    probes: list[Probe] = []
    for name in names:
        note_set: NoteSet = load_set(name)
        okapi = OkapiBM25([note for _, note in note_set.notes])
        messages = [case.message for case in note_set.attach] + note_set.nothing
        offered = offers(embeddings, note_set.notes, messages)
        labels = [(case.kind, case.notes) for case in note_set.attach]
        labels += [("nothing", frozenset())] * len(note_set.nothing)
        for row, (message, (kind, expected)) in enumerate(zip(messages, labels, strict=True)):
            fold = (row if kind != "nothing" else row - len(note_set.attach)) % 2
            best = tuple(note_id for _, note_id in okapi.rank(message)[:PER_TURN])
            probes.append(Probe("developer", kind, expected, fold, offered[row], message, best))
    return probes


def locomo_probes(embeddings: dict[int, Embedding], data: Path, quick: bool) -> list[Probe]:
    """Every LoCoMo question of categories 1-4 as a message over its conversation's turns."""
    turns, questions, _ = load(data)
    if quick:
        questions = [q for q in questions if q.conversation < 2]
    tokenizer = Tokenizer()
    probes: list[Probe] = []
    for conversation in sorted({q.conversation for q in questions}):
        asked: list[Question] = [q for q in questions if q.conversation == conversation]
        conversation_turns: list[Turn] = turns[conversation]
        notes: list[tuple[Scope, Note]] = [
            ("project", note_of(turn, replies=True)) for turn in conversation_turns
        ]
        ids = {dia_id(note.id): note.id for _, note in notes}
        rank = FieldedBM25().build(conversation_turns, tokenizer)
        offered = offers(embeddings, notes, [q.text for q in asked])
        for question, offer in zip(asked, offered, strict=True):
            expected = frozenset(ids[turn] for turn in question.evidence)
            best = tuple(ids[turn] for turn in rank(question.text)[:PER_TURN])
            probes.append(
                Probe("locomo", "question", expected, conversation % 2, offer, question.text, best)
            )
    return probes


def scale_probes(embeddings: dict[int, Embedding], filler: int) -> list[Probe]:
    """Chit-chat and the calibration set over its notes and ``filler`` realistic notes."""
    calibration = load_calibration()
    notes = realistic_notes(filler) + calibration.notes
    chitchat = load_chitchat() + calibration.nothing
    messages = chitchat + [message for message, _ in calibration.attach]
    offered = offers(embeddings, notes, messages)
    probes = [
        Probe("scale", "nothing", frozenset(), row % 2, offered[row], messages[row])
        for row in range(len(chitchat))
    ]
    for row, (message, note_id) in enumerate(calibration.attach):
        offer = offered[len(chitchat) + row]
        probes.append(Probe("scale", "calibration", frozenset({note_id}), row % 2, offer, message))
    return probes


# ---- measuring and tuning --------------------------------------------------------------------


@dataclass
class Tally:
    """What a rule did on some probes."""

    hits: Counter[str]
    counts: Counter[str]
    notes: int = 0
    messages: int = 0
    bm25_hits: int = 0

    @property
    def attach_hits(self) -> int:
        return sum(value for kind, value in self.hits.items() if kind != "nothing")

    @property
    def attach_count(self) -> int:
        return sum(value for kind, value in self.counts.items() if kind != "nothing")

    def rate(self, kind: str | None = None) -> float:
        """Hit rate of ``kind`` (``nothing``: quiet rate), or of all must-attach probes."""
        if kind is None:
            return self.attach_hits / max(1, self.attach_count)
        return self.hits[kind] / max(1, self.counts[kind])


def tally(rule: Rule, probes: Sequence[Probe]) -> Tally:
    """Hits per kind (quiet chit-chat for ``nothing``), notes attached, same-count BM25 hits."""
    result = Tally(Counter(), Counter())
    variant = (rule.dims, rule.variant)
    for probe in probes:
        attached = rule.attach(probe.offers[variant])
        result.counts[probe.kind] += 1
        result.messages += 1
        result.notes += len(attached)
        if probe.kind == "nothing":
            result.hits["nothing"] += not attached
            continue
        result.hits[probe.kind] += bool(probe.expected.intersection(attached))
        result.bm25_hits += bool(probe.expected.intersection(probe.bm25[: len(attached)]))
    return result


def tuning_set(probes: Sequence[Probe], fold: int) -> dict[str, list[Probe]]:
    """The probes a fold's rule is tuned on: its developer fold, LoCoMo's tuned half and the
    even half of the chit-chat at scale."""
    return {
        "developer": [p for p in probes if p.source == "developer" and p.fold == fold],
        "locomo": [p for p in probes if p.source == "locomo" and p.fold == 0],
        "scale": [p for p in probes if p.source == "scale" and p.fold == 0],
    }


def tune(probes: Sequence[Probe], fold: int) -> tuple[Rule, float]:
    """The rule with the best must-attach plus LoCoMo evidence rate on fold ``fold``'s tuning
    probes, among those attaching no more chit-chat than recall alone there and at most
    :data:`MAX_NOTES_PER_QUESTION` notes per LoCoMo question."""
    parts = tuning_set(probes, fold)
    quiet_floor = {
        name: tally(LEXICAL, part).hits["nothing"]
        for name, part in parts.items()
        if name != "locomo"
    }
    best: tuple[float, float, Rule] | None = None
    for rule in rules():
        if any(
            tally(rule, parts[name]).hits["nothing"] < floor for name, floor in quiet_floor.items()
        ):
            continue
        locomo = tally(rule, parts["locomo"])
        if locomo.notes / max(1, locomo.messages) > MAX_NOTES_PER_QUESTION:
            continue
        value = tally(rule, parts["developer"]).rate() + locomo.rate()
        candidate = (value, -locomo.notes / max(1, locomo.messages), rule)
        if best is None or candidate[:2] > best[:2]:
            best = candidate
    assert best is not None  # recall alone always qualifies
    return best[2], best[0]


def cross_fit(rules_by_fold: dict[int, Rule], probes: Sequence[Probe]) -> Tally:
    """Each probe judged by the rule tuned on the other fold."""
    total = Tally(Counter(), Counter())
    for fold, rule in rules_by_fold.items():
        part = tally(rule, [probe for probe in probes if probe.fold != fold])
        total.hits.update(part.hits)
        total.counts.update(part.counts)
        total.notes += part.notes
        total.messages += part.messages
        total.bm25_hits += part.bm25_hits
    return total


class TopCosine(Rule):
    """Always the note of highest cosine (no threshold): what the signal ranks first."""

    def attach(self, offer: Offer) -> list[str]:
        return [offer.best[0][0]] if offer.best else []


# ---- reporting -------------------------------------------------------------------------------


def ablations(rules_by_fold: dict[int, Rule]) -> list[tuple[str, dict[int, Rule]]]:
    """The tuned rules, each part alone, and ``minScore`` lowered with no semantic check."""

    def each(**changes: Any) -> dict[int, Rule]:
        return {fold: replace(rule, **changes) for fold, rule in rules_by_fold.items()}

    return [
        ("recall + semantic", rules_by_fold),
        ("  rescue part only", each(shared_cosine=None, alone_cosine=None)),
        ("  shared part only", each(rescue_score=None, alone_cosine=None)),
        ("  alone part only", each(rescue_score=None, shared_cosine=None)),
        (
            "  minScore lowered, no cosine",
            each(rescue_cosine=-1.0, shared_cosine=None, alone_cosine=None),
        ),
    ]


def print_developer(probes: Sequence[Probe], rules_by_fold: dict[int, Rule]) -> None:
    """Per kind over the four sets: recall, recall + semantic (cross-fit), same-count BM25."""
    developer = [probe for probe in probes if probe.source == "developer"]
    lexical = tally(LEXICAL, developer)
    top = tally(TopCosine(), developer)
    columns = (*KINDS, "all", "quiet", "n/msg")
    print("Developer sets (all four), must-attach hits / messages per kind; quiet: chit-chat")
    print("attaching nothing; n/msg: notes attached per message (attach and chit-chat).")
    print("recall + semantic: each message judged by the rule tuned on the other fold.")
    header = f"{'system':<36} " + " ".join(f"{column[:10]:>10}" for column in columns)
    print(header)
    print("-" * len(header))
    rows: list[tuple[str, Tally, bool]] = [
        ("recall (default settings)", lexical, False),
        ("  BM25 same count", lexical, True),
    ]
    for label, fitted in ablations(rules_by_fold):
        rows.append((label, cross_fit(fitted, developer), False))
        rows.append(("  BM25 same count", rows[-1][1], True))
    rows.append(("top cosine note, no threshold", top, False))
    for label, result, bm25 in rows:
        cells = []
        for kind in KINDS:
            hits = result.hits[kind] if not bm25 else None
            cells.append(f"{hits}/{result.counts[kind]}" if hits is not None else "")
        hits = result.bm25_hits if bm25 else result.attach_hits
        cells.append(f"{hits}/{result.attach_count} ({hits / max(1, result.attach_count):.3f})")
        cells.append(f"{result.hits['nothing']}/{result.counts['nothing']}" if not bm25 else "")
        cells.append(f"{result.notes / max(1, result.messages):.2f}" if not bm25 else "")
        print(f"{label:<36} " + " ".join(f"{cell:>10}" for cell in cells))
    print()


def print_locomo(probes: Sequence[Probe], rules_by_fold: dict[int, Rule]) -> None:
    """LoCoMo per half: evidence found, notes attached, none, BM25 with the same count."""
    print("LoCoMo per message (each question as the user message): evidence: an evidence turn")
    print("attached; attached: notes per question; none: questions attaching nothing; BM25:")
    print("Okapi BM25 given the same number of notes per question.")
    columns = ("evidence", "attached", "none", "BM25", "margin")
    header = f"{'system':<36} {'half':<9} {'n':>5} " + " ".join(f"{c:>9}" for c in columns)
    print(header)
    print("-" * len(header))
    systems = reported_systems(rules_by_fold)
    for label, rule in systems:
        for half, fold in (("tuned", 0), ("held-out", 1)):
            part = [p for p in probes if p.source == "locomo" and p.fold == fold]
            if not part:
                continue
            result = tally(rule, part)
            count = max(1, result.messages)
            bm25 = result.bm25_hits / count
            print(
                f"{label:<36} {half:<9} {result.messages:>5} {result.rate():9.3f} "
                f"{result.notes / count:9.2f} {none_share(rule, part):9.3f} "
                f"{bm25:9.3f} {result.rate() - bm25:+9.3f}"
            )
    print()


def reported_systems(rules_by_fold: dict[int, Rule]) -> list[tuple[str, Rule]]:
    """Recall with its default settings, then each ablation's rule fitted on each fold."""
    systems = [("recall (default settings)", LEXICAL)]
    for label, fitted in ablations(rules_by_fold):
        systems += [(f"{label}, rule {fold}", rule) for fold, rule in fitted.items()]
    return systems


def none_share(rule: Rule, probes: Sequence[Probe]) -> float:
    """The share of probes for which ``rule`` attaches nothing."""
    variant = (rule.dims, rule.variant)
    return sum(1 for p in probes if not rule.attach(p.offers[variant])) / max(1, len(probes))


def print_scale(probes: Sequence[Probe], rules_by_fold: dict[int, Rule], filler: int) -> None:
    """Chit-chat and calibration over the calibration notes and the filler (odd half)."""
    part = [p for p in probes if p.source == "scale" and p.fold == 1]
    if not part:
        return
    print(
        f"Chit-chat at scale (odd half: reported; the even half constrained the tuning): "
        f"chitchat.json and the calibration's must-attach-nothing over its notes and "
        f"{filler:,} realistic filler notes"
    )
    header = f"{'system':<36} {'chit-chat quiet':>16} {'calibration hit':>16} {'n/msg':>6}"
    print(header)
    print("-" * len(header))
    systems = reported_systems(rules_by_fold)
    for label, rule in systems:
        result = tally(rule, part)
        quiet = f"{result.hits['nothing']}/{result.counts['nothing']}"
        found = f"{result.hits['calibration']}/{result.counts['calibration']}"
        print(f"{label:<36} {quiet:>16} {found:>16} {result.notes / max(1, result.messages):6.2f}")
    print()


def print_separation(probes: Sequence[Probe], rule: Rule) -> None:
    """How far apart the highest cosine is for must-attach messages whose note ranks first and
    for chit-chat: why the threshold of the alone part cannot go lower."""
    variant = (rule.dims, rule.variant)
    groups = {
        "developer must-attach, its note first": [
            p.offers[variant].best[0][1]
            for p in probes
            if p.source == "developer" and p.expected and p.offers[variant].best[0][0] in p.expected
        ],
        "developer chit-chat": [
            p.offers[variant].best[0][1]
            for p in probes
            if p.source == "developer" and p.kind == "nothing"
        ],
        "chit-chat at scale (both halves)": [
            p.offers[variant].best[0][1] for p in probes if p.source == "scale" and not p.expected
        ],
    }
    print(f"Highest cosine of a message with any note ({rule.dims}d {rule.variant}):")
    print(f"{'messages':<40} {'n':>4} {'p10':>6} {'p50':>6} {'p90':>6} {'max':>6}")
    for label, values in groups.items():
        if values:
            p10, p50, p90 = np.percentile(values, [10, 50, 90])
            print(
                f"{label:<40} {len(values):>4} {p10:6.3f} {p50:6.3f} {p90:6.3f} {max(values):6.3f}"
            )
    print()


def print_changes(probes: Sequence[Probe], rules_by_fold: dict[int, Rule]) -> None:
    """The developer messages the semantic stage won or lost, and the chit-chat it attached
    (at scale: the reported half), each judged by the rule not tuned on it."""
    print("What the semantic stage changed (developer sets; chit-chat at scale, odd half)")
    for probe in probes:
        if probe.source == "locomo" or (probe.source == "scale" and probe.fold == 0):
            continue
        rule = rules_by_fold[1 - probe.fold] if probe.source == "developer" else rules_by_fold[0]
        before = LEXICAL.attach(probe.offers[rule.dims, rule.variant])
        after = rule.attach(probe.offers[rule.dims, rule.variant])
        if before == after:
            continue
        if probe.kind == "nothing":
            verdict = "chit-chat attached" if after else "chit-chat now quiet"
        else:
            won, lost = (bool(probe.expected.intersection(a)) for a in (after, before))
            verdicts = {(True, False): "won", (False, True): "lost", (True, True): "note added"}
            verdict = verdicts.get((won, lost), "wrong note added")
        added = [note_id for note_id in after if note_id not in before]
        print(f"  {probe.source:<9} [{probe.kind}] {verdict}: {probe.message[:70]!r} + {added}")
    print()


# ---- cost ------------------------------------------------------------------------------------

# A child from Python and numpy: what wordllama's own import and loader cost and do offline
# (every socket connection refused, so an attempted download shows as an error).
_WORDLLAMA = """
import json, socket, time
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
def refuse(self, *args, **kwargs):
    raise OSError("network refused by the benchmark")
socket.socket.connect = refuse
import numpy
base = rss()
started = time.perf_counter()
from wordllama import WordLlama
imported = time.perf_counter()
after = rss()
try:
    WordLlama.load(disable_download=True)
    outcome = "loaded"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {exc}"
try:
    WordLlama.load()
    online = "loaded"
except Exception as exc:
    online = f"{type(exc).__name__}: {str(exc)[:90]}"
print(json.dumps({"import_s": imported - started, "import_mb": after - base,
                  "offline": outcome, "default": online}))
"""

# A child from Python and numpy: the lean loader, then 200 messages embedded, then the vectors
# of ``notes`` notes at ``dims`` dimensions; the resident size after each step.
_LEAN = """
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
base = rss()
started = time.perf_counter()
from recall_semantic import Embedding
embedding = Embedding(int(sys.argv[3]))
loaded = time.perf_counter()
after_load = rss()
messages = json.loads(sys.argv[4])
embedding.embed(messages)
after_messages = rss()
vectors = np.zeros((int(sys.argv[2]), int(sys.argv[3])), dtype=np.float32) + 1
print(json.dumps({"load_s": loaded - started, "base_mb": base, "load_mb": after_load - base,
                  "messages_mb": after_messages - after_load,
                  "vectors_mb": rss() - after_messages}))
"""


def child(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` in a new Python process and read the JSON it prints."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def percentiles(samples: Sequence[float]) -> str:
    """``p50 / p95 ms``."""
    p50, p95 = np.percentile(np.array(samples) * 1000.0, [50, 95])
    return f"{p50:.2f} / {p95:.2f} ms"


def timed(function: Callable[[str], object], messages: Sequence[str]) -> list[float]:
    samples = []
    for message in messages:
        started = time.perf_counter()
        function(message)
        samples.append(time.perf_counter() - started)
    return samples


def long_messages(messages: Sequence[str], count: int, words: int = 130) -> list[str]:
    """Messages of about ``words`` words, each made of consecutive short ones."""
    joined = " ".join(messages).split()
    return [" ".join(joined[start * words : (start + 1) * words]) for start in range(count)]


def print_cost(count: int, embeddings: dict[int, Embedding]) -> None:
    """Imports, memory and time of the semantic stage at ``count`` synthetic notes."""
    print(f"Cost at {count:,} synthetic notes (bench/recall_corpus.py)")
    own = child(_WORDLLAMA)
    print(f"import wordllama: {own['import_s']:.3f} s, +{own['import_mb']:.1f} MB resident")
    print(f"WordLlama.load(disable_download=True) offline: {own['offline']}")
    print(f"WordLlama.load() offline: {own['default']}")
    corpus = synthetic_corpus(count)
    messages = synthetic_messages(corpus, 1000)
    long = long_messages(messages, 200)
    for dims in (256, 64):
        lean = child(
            _LEAN,
            str(Path(__file__).resolve().parent),
            str(count),
            str(dims),
            json.dumps(messages[:200]),
        )
        print(
            f"{dims:>3} dims: tokeniser + table loaded in {lean['load_s']:.3f} s; resident "
            f"+{lean['load_mb']:.1f} MB loaded, +{lean['messages_mb']:.1f} MB after 200 "
            f"messages, +{lean['vectors_mb']:.1f} MB for {count:,} note vectors "
            f"({count * dims * 4 / 2**20:.1f} MB by size); python + numpy {lean['base_mb']:.1f} MB"
        )
    embedding = embeddings[256]
    for variant in ("summary+tags", "whole note"):
        texts = [note_text(note, variant) for _, note in corpus.notes]
        started = time.perf_counter()
        embedding.embed(texts)
        elapsed = time.perf_counter() - started
        print(
            f"embedding a note ({variant}): {elapsed / count * 1e6:.0f} us per note, "
            f"{elapsed:.2f} s for {count:,}"
        )
    index = RecallIndex()
    index.add_many(corpus.notes)
    lowered = RecallSettings(min_score=min(RESCUE_SCORES))
    for label, sample in (("5-60 words", messages), ("~130 words", long)):
        print(f"messages of {label} (p50 / p95 wall):")
        print(f"  recall alone                        {percentiles(timed(index.recall, sample))}")
        for dims in (256, 64):
            embedding = embeddings[dims]
            vectors = embedding.embed([note_text(n, "summary+tags") for _, n in corpus.notes])

            def semantic(message: str, embedding: Embedding = embedding, v: Any = vectors) -> Any:
                return v @ embedding.embed([message])[0]

            def both(message: str, step: Callable[[str], Any] = semantic) -> Any:
                return index.recall(message, settings=lowered), step(message)

            print(
                f"  {dims:>3} dims: message vector + cosines {percentiles(timed(semantic, sample))}"
            )
            print(
                f"  {dims:>3} dims: recall at minScore {lowered.min_score} + that "
                f"{percentiles(timed(both, sample))}"
            )
    print()


# ---- the run ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo folder")
    parser.add_argument("--quick", action="store_true", help="two sets, two conversations")
    parser.add_argument("--no-cost", action="store_true", help="skip the cost measurements")
    args = parser.parse_args(argv)
    try:
        embeddings = {dims: Embedding(dims) for dims in (256, 64)}
    except ModuleNotFoundError:
        print(MISSING)
        return 2
    print(f"load average {os.getloadavg()[0]:.1f} at the start, on {os.cpu_count()} cores")
    started = time.perf_counter()
    names = SETS[:2] if args.quick else SETS
    probes = developer_probes(embeddings, names)
    if (args.data / "locomo10.json").is_file():
        probes += locomo_probes(embeddings, args.data, args.quick)
    else:
        print(f"LoCoMo data not found in {args.data}: LoCoMo left out (pass --data PATH)")
    filler = 500 if args.quick else FILLER
    probes += scale_probes(embeddings, filler)
    print(f"Offers computed in {time.perf_counter() - started:.0f} s\n")
    rules_by_fold = {}
    for fold in (0, 1):
        rule, value = tune(probes, fold)
        rules_by_fold[fold] = rule
        print(f"rule {fold} (tuned on developer fold {fold}): {rule.label()} (value {value:.3f})")
    print()
    print_developer(probes, rules_by_fold)
    print_locomo(probes, rules_by_fold)
    print_scale(probes, rules_by_fold, filler)
    print_separation(probes, rules_by_fold[0])
    print_changes(probes, rules_by_fold)
    if not args.no_cost:
        print_cost(500 if args.quick else FILLER, embeddings)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
