"""Recall speed (spec 03.3): build, cache load in a new process, per-message latency.

10,000 synthetic notes (two scopes of 5,000, bodies of 40-400 words from a Zipf vocabulary,
seeded; see ``recall_corpus.py``) are indexed from scratch, the derived cache is written, new
Python processes are spawned to load it and answer one message (the median of a few, wall and
CPU time; with bytecode compiled, as an installed package has it: a first spawn writes it),
and messages are timed against the warm index - and, in the same run, against a naive
full-scan scorer (the same formula, computed note by note from per-note term counts) and a
SQLite FTS5 table with ``bm25()`` ranking. The recall rows: after 50 messages of warm-up, a
first pass (each message once, most of its terms new to the per-term tables), the same
messages again, and messages each right after a single-note update (the tables start
afresh); long messages (130 words) apart. Memory and whole-process costs are measured in
fresh processes (``recall_footprint.py``). The bars are issue 28's at 10,000 notes: recall
p95 <= 3 ms (<= 10 ms for 130-word messages) and at least 20 times faster than FTS5's OR
query, a process with the index loaded <= 60 MB resident, a first build's peak <= 150 MB,
a new process ready <= 0.3 s, ``oharness memory remember`` <= 0.5 s::

    python bench/recall_latency.py            # the spec's 10,000 notes
    python bench/recall_latency.py --quick    # 1,000 notes, a few seconds, for CI
"""

from __future__ import annotations

import argparse
import itertools
import json
import marshal
import os
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from recall_corpus import Corpus, synthetic_corpus, synthetic_messages
from recall_footprint import bare_resident, build_peak, remember_process

from oharness.notes.format import Note
from oharness.recall import gate
from oharness.recall.cache import read_cache, write_cache
from oharness.recall.index import COVERAGE_POWER, TAG_FACET, RecallIndex
from oharness.recall.judge import RELATED_FACTOR, related_terms
from oharness.recall.postings import CacheKey, NoteKey
from oharness.recall.score import DEFAULT_PARAMS, MIN_TERM_WEIGHT
from oharness.recall.scoring import search_weight, term_weight
from oharness.recall.tokenize import Tokenizer
from oharness.recall.words import FRAME_WORDS
from oharness.settings import RecallSettings
from oharness.types import Scope

_CHILD = """
import time
started = time.perf_counter()
import marshal, sys, json
keys = {(s, i): k for s, i, k in marshal.loads(open(sys.argv[1], "rb").read())}
from oharness.recall.cache import read_cache
from oharness.recall.index import RecallIndex
imported = time.perf_counter()
index = RecallIndex()
missing = read_cache(sys.argv[2], index, keys)
loaded = time.perf_counter()
index.recall(sys.argv[3])
answered = time.perf_counter()
rss = int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
print(json.dumps({"rss_mb": rss, "imports": imported - started, "load": loaded - imported,
                  "first_recall": answered - loaded, "ready": answered - started,
                  "notes": len(index), "missing": len(missing)}))
"""


def saturation(x: float) -> float:
    """BM25 term-frequency saturation."""
    k1 = DEFAULT_PARAMS.k1
    return x * (k1 + 1.0) / (x + k1) if x > 0 else 0.0


def _passes(shared: float, topic: float, said: float, *, phrase: bool, strongest: float) -> bool:
    """The gate's rule (:func:`~oharness.recall.gate.passes`) for one note."""
    one = (np.array([shared]), np.array([topic]), said, np.array([phrase]), np.array([strongest]))
    return bool(gate.passes(*one)[0])


def percentiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """p50, p95, p99 in milliseconds."""
    values = np.percentile(np.array(samples) * 1000.0, [50, 95, 99])
    return float(values[0]), float(values[1]), float(values[2])


def timed(
    function: Callable[[str], object],
    messages: Sequence[str],
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    samples = []
    for message in messages:
        started = clock()
        function(message)
        samples.append(clock() - started)
    return samples


class NaiveScorer:
    """The recall formula evaluated note by note over per-note term counts: the floor."""

    def __init__(self, tokenizer: Tokenizer, notes: Sequence[tuple[Scope, Note]]) -> None:
        self.tokenizer = tokenizer
        self.keys = [(scope, note.id) for scope, note in notes]
        self.fields = [
            (
                tokenizer.counts(note.summary),
                tokenizer.counts("\n".join(note.tags)),
                tokenizer.counts(note.body),
            )
            for _, note in notes
        ]
        self.lengths = [tuple(sum(f.values()) for f in fields) for fields in self.fields]
        count = len(notes)
        self.averages = [max(1.0, sum(row[i] for row in self.lengths) / count) for i in range(3)]
        self.phrases = [set(tokenizer.phrases(note.summary)) for _, note in notes]
        self.tags = [
            _whole_tags(tokenizer, note.tags, fields[0])
            for (_, note), fields in zip(notes, self.fields, strict=True)
        ]
        english = "english" in tokenizer.languages
        self.related = related_terms(tokenizer.tokens) if english else {}
        self.frame = (
            {t for word in FRAME_WORDS for t in tokenizer.tokens(word)} if english else set()
        )
        self.frequency: dict[str, int] = {}
        self.topic_frequency: dict[str, int] = {}  # notes holding it in summary or tags
        self._weights: dict[str, float] = {}
        self._topic_weights: dict[str, float] = {}
        for summary, tags, body in self.fields:
            for term in {*summary, *tags, *body}:
                self.frequency[term] = self.frequency.get(term, 0) + 1
            for term in {*summary, *tags}:
                self.topic_frequency[term] = self.topic_frequency.get(term, 0) + 1

    def recall(self, message: str, minimum: float = 1.2) -> list[tuple[float, NoteKey]]:
        """What the index attaches, computed note by note (gate of :mod:`~.recall.judge`)."""
        groups = [g for g in self.tokenizer.query_terms(message) if not self.frame.issuperset(g)]
        terms = [group[0] for group in groups]
        said_terms = {term for group in groups for term in group}
        related = {
            other: term
            for term in terms
            for other in self.related.get(term, ())
            if other not in said_terms
        }
        said = sum(self._topic_weight(term) for term in terms)
        phrases = set(self.tokenizer.phrases(message))
        found: list[tuple[float, NoteKey, bool]] = []
        crowd: list[tuple[float, NoteKey, bool]] = []
        self._judged: dict[NoteKey, tuple[int, float]] = {}
        for position, key in enumerate(self.keys):
            judged = self._judge(position, terms, related, said, phrases, minimum)
            if judged is not None:
                ranked, phrase, everyday = judged
                (crowd if everyday else found).append((ranked, key, phrase))
        if len(crowd) < 3:  # everyday words alone that pass on perTurn notes single none out
            found += crowd
        found.sort(reverse=True)
        if found:
            floor = gate.RELATIVE_FLOOR * found[0][0]
            found = [item for item in found if item[0] >= floor or item[2]]
        chosen = [(score, key) for score, key, _ in found[:3]]
        return chosen if len(chosen) < 2 else self._beside_search(chosen, terms)

    def _beside_search(
        self, chosen: list[tuple[float, NoteKey]], terms: list[str]
    ) -> list[tuple[float, NoteKey]]:
        """The gate's notes taken in turn with search's order of the notes judged: plain
        BM25 weights of the message's words (those recall weighs at MIN_TERM_WEIGHT or more),
        times the share of their weight a note holds and its tag facets (the synthetic notes
        have no links)."""
        count = len(self.keys)
        words = [t for t in terms if self.frequency.get(t) and self._weight(t) >= MIN_TERM_WEIGHT]
        plain = {t: float(search_weight(self.frequency[t], count)) for t in words}
        tagged = [t for t in words if any(t in fields[1] for fields in self.fields)]
        ranked: list[tuple[float, NoteKey]] = []
        for key, (position, _) in self._judged.items():
            fields = self.fields[position]
            score = covered = 0.0
            for term in words:
                x = self._field_weighted(position, term)
                if x:
                    score += plain[term] * saturation(x)
                    covered += plain[term]
            score *= min(covered / sum(plain.values()), 1.0) ** COVERAGE_POWER
            if tagged:
                score *= 1.0 + TAG_FACET * sum(t in fields[1] for t in tagged) / len(tagged)
            ranked.append((-score, key))
        ranked.sort()
        gate_scores = dict((key, score) for score, key in chosen)
        order: dict[NoteKey, None] = {}
        for (_, first), second in itertools.zip_longest(chosen, ranked, fillvalue=(0.0, None)):
            order.update((key, None) for key in (first, second[1]) if key is not None)
        return [
            (gate_scores.get(key, self._judged[key][1]), key) for key in list(order)[: len(chosen)]
        ]

    def _judge(
        self,
        position: int,
        terms: list[str],
        related: dict[str, str],
        said: float,
        phrases: set[str],
        minimum: float,
    ) -> tuple[float, bool, bool] | None:
        """One note: None when it fails, else its ranking score, whether a phrase of its
        summary is said, and whether it passed on everyday words alone."""
        weight, topical = self._weight, self._topic_weight
        fields = self.fields[position]
        short = self.lengths[position][2] <= gate.SHORT_BODY
        score, shared, strongest, body, body_strongest, words = 0.0, 0.0, 0.0, 0.0, 0.0, 0
        for term in terms:
            x = self._field_weighted(position, term)
            if x:
                score += weight(term) * saturation(x)
                if term in fields[0] or term in fields[1]:
                    shared += topical(term)
                    strongest = max(strongest, topical(term))
                elif short:
                    body += weight(term)
                    body_strongest = max(body_strongest, weight(term))
                    words += 1
        for other, term in related.items():
            x = self._field_weighted(position, other)
            if x:
                score += RELATED_FACTOR * weight(other) * saturation(x)
                own = term in fields[0] or term in fields[1]
                if not own and (other in fields[0] or other in fields[1]):
                    shared += RELATED_FACTOR * topical(other)
        if score < minimum or not shared:
            return None
        self._judged[self.keys[position]] = (position, score)
        whole, unused = self.tags[position]
        tag_only = bool(unused & ({*terms} | phrases))
        head = {*fields[0], *fields[1]}
        topic = sum(topical(term) for term in head)
        rest = sum(weight(term) for term in fields[2] if term not in head) if short else 0.0
        phrase = bool(phrases & self.phrases[position])
        first = _passes(shared, topic, said, phrase=phrase or tag_only, strongest=strongest)
        if not first:
            named = phrase or (tag_only and words >= gate.NAMED_BODY_WORDS)
            strongest = max(strongest, body_strongest)
            if not body or not _passes(
                shared + body, topic + rest, said, phrase=named, strongest=strongest
            ):
                return None
        tags = len(whole & ({*terms} | phrases))
        everyday = not (phrase or tag_only) and strongest < gate.DISTINCTIVE
        return score * (1 + gate.TAG_RANK * tags), phrase, everyday

    def _weight(self, term: str) -> float:
        return self._weighed(term, self.frequency, self._weights)

    def _topic_weight(self, term: str) -> float:
        return self._weighed(term, self.topic_frequency, self._topic_weights)

    def _weighed(self, term: str, frequency: dict[str, int], known: dict[str, float]) -> float:
        """The product's recall weight of ``term`` by ``frequency``, computed once per term."""
        if term not in known:
            prior = self.tokenizer.prior(term)
            known[term] = float(term_weight(frequency.get(term, 0), len(self.keys), prior))
        return known[term]

    def _field_weighted(self, position: int, term: str) -> float:
        params = DEFAULT_PARAMS
        x = 0.0
        for field, boost, b, length, average in zip(
            self.fields[position],
            params.boosts,
            params.length_factors,
            self.lengths[position],
            self.averages,
            strict=True,
        ):
            tf = field.get(term, 0)
            if tf:
                x += boost * tf / (1 - b + b * length / average)
        return x


def _whole_tags(
    tokenizer: Tokenizer, tags: Sequence[str], summary: dict[str, int]
) -> tuple[set[str], set[str]]:
    """A note's whole tags as the message terms that say them, and those the summary lacks."""
    whole: set[str] = set()
    unused: set[str] = set()
    for tag in tags:
        words = tokenizer.query_terms(tag)
        if len(words) == 1:
            mark = words[0][0]
        elif len(words) <= 3 and tokenizer.phrases(tag):
            mark = tokenizer.phrases(tag)[-1]
        else:
            continue
        whole.add(mark)
        if any(group[-1] not in summary for group in words):
            unused.add(mark)
    return whole, unused


class Fts5Baseline:
    """SQLite FTS5 over summary, tags and body, OR of the message's words, ``bm25()`` order."""

    _WORD = re.compile(r"\w+")

    def __init__(self, notes: Sequence[tuple[Scope, Note]]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE notes USING fts5(summary, tags, body)")
        self.db.executemany(
            "INSERT INTO notes (summary, tags, body) VALUES (?, ?, ?)",
            ((note.summary, " ".join(note.tags), note.body) for _, note in notes),
        )
        self.db.commit()

    def search(self, message: str) -> list[tuple[int, float]]:
        words = dict.fromkeys(word.lower() for word in self._WORD.findall(message))
        if not words:
            return []
        query = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
        rows = self.db.execute(
            "SELECT rowid, bm25(notes, 3.0, 3.0, 1.0) AS rank FROM notes "
            "WHERE notes MATCH ? ORDER BY rank LIMIT 3",
            (query,),
        ).fetchall()
        return [(int(row[0]), float(row[1])) for row in rows]


def cache_keys(corpus: Corpus) -> dict[NoteKey, CacheKey]:
    """Stand-ins for each file's (mtime_ns, size, inode)."""
    return {
        (scope, note.id): (1_700_000_000_000_000_000 + n, len(note.body.encode()), 10_000 + n)
        for n, (scope, note) in enumerate(corpus.notes)
    }


def new_process(
    cache: Path, keys: dict[NoteKey, CacheKey], message: str, runs: int
) -> dict[str, float]:
    """Spawn fresh interpreters that load the cache and answer one recall: the median of
    ``runs`` (after one that writes the bytecode), each part and the CPU time (user + system).
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.NamedTemporaryFile(suffix=".keys", delete=False) as handle:
        handle.write(marshal.dumps([(s, i, k) for (s, i), k in keys.items()]))
    results: list[dict[str, float]] = []
    try:
        for _ in range(runs + 1):
            cpu_before = _children_cpu()
            started = time.perf_counter()
            output = subprocess.run(
                [sys.executable, "-c", _CHILD, handle.name, str(cache), message],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            ).stdout
            result: dict[str, float] = json.loads(output)
            result["wall"] = time.perf_counter() - started
            result["cpu"] = _children_cpu() - cpu_before
            results.append(result)
    finally:
        os.unlink(handle.name)
    return {name: statistics.median(r[name] for r in results[1:]) for name in results[0]}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def long_versions(messages: Sequence[str], count: int, words: int = 130) -> list[str]:
    """Messages of ``words`` words, each made of consecutive short ones."""
    result = []
    for start in range(count):
        joined: list[str] = []
        position = start * 3
        while len(joined) < words:
            joined += messages[position % len(messages)].split()
            position += 1
        result.append(" ".join(joined[:words]))
    return result


def update_latency(index: RecallIndex, corpus: Corpus, count: int) -> list[float]:
    """Edit single notes and check that the next recall sees the edit."""
    samples = []
    for n in range(count):
        scope, note = corpus.notes[(n * 7919) % len(corpus.notes)]
        marker = f"zzedit{n}marker"
        edited = note.with_changes(summary=f"{note.summary} {marker}")
        started = time.perf_counter()
        index.add(scope, edited)
        samples.append(time.perf_counter() - started)
        assert [hit.id for hit in index.recall(marker)] == [note.id], "edit not reflected"
        index.add(scope, note)
    return samples


def after_updates(
    index: RecallIndex, corpus: Corpus, messages: Sequence[str], clock: Callable[[], float]
) -> list[float]:
    """Each message recalled right after a single-note update: every per-term table starts
    afresh (the update moves every term's weight), so this is the lazy path, term by term."""
    samples = []
    for n, message in enumerate(messages):
        scope, note = corpus.notes[(n * 104_729) % len(corpus.notes)]
        index.add(scope, note.with_changes(summary=f"{note.summary} revised"))
        started = clock()
        index.recall(message)
        samples.append(clock() - started)
        index.add(scope, note)
    return samples


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes, fewer messages")
    parser.add_argument("--notes", type=int, help="number of notes (default 10,000)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    count = args.notes or (1_000 if args.quick else 10_000)
    message_count, naive_count = (200, 20) if args.quick else (1_000, 60)

    corpus = synthetic_corpus(count, seed=args.seed)
    messages = synthetic_messages(corpus, message_count, seed=args.seed + 1)
    keys = cache_keys(corpus)
    words = sum(len(note.body.split()) for _, note in corpus.notes) / count
    print(f"{count:,} notes ({count // 2:,} per scope), {words:.0f} body words on average, ")
    print(
        f"{message_count:,} messages of 5-60 words; Python {sys.version.split()[0]}; load average"
    )
    print(f"{os.getloadavg()[0]:.1f} at the start on {os.cpu_count()} cores (wall times wait for")
    print("a core when it is high; the CPU-time row does not)\n")

    started, cpu_started = time.perf_counter(), time.process_time()
    index = RecallIndex()
    index.add_many(corpus.notes, keys)
    build = time.perf_counter() - started
    build_cpu = time.process_time() - cpu_started

    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "recall-index.bin"
        started = time.perf_counter()
        write_cache(cache, index)
        write = time.perf_counter() - started
        size = cache.stat().st_size
        child = new_process(cache, keys, messages[0], 3 if args.quick else 5)
        restored = RecallIndex()
        started = time.perf_counter()
        read_cache(cache, restored, keys)
        load_here = time.perf_counter() - started
    del restored

    settings = RecallSettings()
    for message in messages[:50]:
        index.recall(message)  # warm up
    recall_times = timed(lambda m: index.recall(m, settings=settings), messages)
    # CPU time of the same messages again, each now seen once before: on a busy machine wall
    # time mostly measures waiting for a core.
    recall_cpu = timed(lambda m: index.recall(m, settings=settings), messages, time.process_time)
    updated = after_updates(index, corpus, messages[: message_count // 5], time.perf_counter)
    updated_cpu = after_updates(index, corpus, messages[: message_count // 5], time.process_time)
    long_messages = long_versions(messages, 200)
    long_words = statistics.mean(len(m.split()) for m in long_messages)
    long_times = timed(lambda m: index.recall(m, settings=settings), long_messages)
    search_times = timed(lambda m: index.search(m, 10), messages)
    attached = [bool(index.recall(m)) for m in messages]
    updates = update_latency(index, corpus, 100 if not args.quick else 30)

    started = time.perf_counter()
    naive = NaiveScorer(index.tokenizer, corpus.notes)
    naive_build = time.perf_counter() - started
    naive_times = timed(naive.recall, messages[:naive_count])
    # Same attachments, compared by score: exact ties may be broken differently.
    agree = sum(
        [round(score, 5) for score, _ in naive.recall(m)]
        == [round(hit.score, 5) for hit in index.recall(m)]
        for m in messages[:naive_count]
    )
    started = time.perf_counter()
    fts = Fts5Baseline(corpus.notes)
    fts_build = time.perf_counter() - started
    fts_times = timed(fts.search, messages)
    fts_long = timed(fts.search, long_messages)
    peak = build_peak(corpus)
    bare = bare_resident()
    remember = remember_process(count, 1 if args.quick else 3)

    print(f"{'measure':<52} {'value':>12}  bar")
    print("-" * 76)
    rows = [
        ("first build, no cache (tokenise + index)", f"{build:.2f} s", ""),
        ("  the same, CPU time", f"{build_cpu:.2f} s", ""),
        (f"cache write ({size / 1e6:.1f} MB, atomic)", f"{write:.2f} s", ""),
        ("new process: spawn, cache loaded, first recall", f"{child['wall']:.2f} s", "<= 0.3 s"),
        ("  the same, CPU time (user + system)", f"{child['cpu']:.2f} s", ""),
        ("  of which imports (numpy, oharness.recall)", f"{child['imports']:.2f} s", ""),
        ("  of which cache load and validation", f"{child['load']:.2f} s", ""),
        ("  of which the first recall", f"{child['first_recall']:.2f} s", ""),
        ("cache load in this process", f"{load_here:.2f} s", ""),
        ("resident memory, new process with the index loaded", f"{child['rss_mb']:.0f} MB", ""),
        ("  a process with Python and numpy only", f"{bare:.0f} MB", ""),
        ("first build's peak (its process, corpus included)", f"{peak['peak_mb']:.0f} MB", ""),
        ("    before it: Python and the notes in memory", f"{peak['corpus_mb']:.0f} MB", ""),
        ("oharness memory remember, whole process", f"{remember['wall']:.2f} s", ""),
        ("  its peak resident memory", f"{remember['peak_mb']:.0f} MB", ""),
        ("single-note update (p50 / p95)", _pair(updates), ""),
        ("SQLite FTS5 build (insert all notes)", f"{fts_build:.2f} s", ""),
        ("naive full-scan scorer build (token counts)", f"{naive_build:.2f} s", ""),
    ]
    for name, value, bar in rows:
        print(f"{name:<52} {value:>12}  {bar}")
    print(f"\n{'per-message latency (ms)':<32} {'p50':>8} {'p95':>8} {'p99':>8} {'n':>6}")
    print("-" * 66)
    for name, samples in (
        ("recall, first pass", recall_times),
        ("  the same, again, CPU time", recall_cpu),
        ("recall right after an update", updated),
        ("  the same, CPU time", updated_cpu),
        (f"recall, long messages (~{long_words:.0f} words)", long_times),
        ("search (index)", search_times),
        ("naive full-scan scorer", naive_times),
        ("SQLite FTS5 bm25(), OR query", fts_times),
        ("  the same, long messages", fts_long),
    ):
        p50, p95, p99 = percentiles(samples)
        print(f"{name:<32} {p50:8.2f} {p95:8.2f} {p99:8.2f} {len(samples):6d}")
    kinds = ("about a note", "chit-chat", "random words")
    shares = [statistics.mean(attached[k::3]) for k in range(3)]
    print(
        "\nmessages attaching a note: "
        + ", ".join(f"{kind} {share:.0%}" for kind, share in zip(kinds, shares, strict=True))
    )
    print(f"naive scorer and index attach the same notes: {agree}/{naive_count} messages")
    ratio = percentiles(fts_times)[1] / percentiles(recall_times)[1]
    ratio_long = percentiles(fts_long)[1] / percentiles(long_times)[1]
    print(f"FTS5 OR query p95 / recall p95: {ratio:.1f}x, long messages {ratio_long:.1f}x")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    checks = {
        "recall p95 <= 3 ms": percentiles(recall_times)[1] <= 3,
        "long p95 <= 10 ms": percentiles(long_times)[1] <= 10,
        ">= 20x FTS5": ratio >= 20,
        "resident <= 60 MB": child["rss_mb"] <= 60,
        "build peak <= 150 MB": peak["peak_mb"] <= 150,
        "ready <= 0.3 s": child["wall"] <= 0.3,
        "remember <= 0.5 s": remember["wall"] <= 0.5,
    }
    ok = all(checks.values())
    print("bars: " + ", ".join(f"{name} {'yes' if met else 'NO'}" for name, met in checks.items()))
    return 0 if ok or args.quick else 1


def _pair(samples: Sequence[float]) -> str:
    p50, p95, _ = percentiles(samples)
    return f"{p50:.2f}/{p95:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
