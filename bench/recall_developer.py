"""Per-message recall on developer note sets: does it attach what people mean?

Four note sets in ``tests/data/recall/developer/``, each one developer's project memory as a
coding agent saves it: ``five`` (a small CLI tool), ``twenty`` (a mobile app), ``fifty`` (a
payments API) and ``five_hundred`` (a platform team's monorepo). Each set holds messages a
person types in a session with the note(s) that should be attached, labelled by kind
(``words``: shared words; ``paraphrase``; ``everyday`` words for the note's topic;
``cross_language``: the message and the note in different languages; ``typo``; ``compound``:
a word joined or split differently), and chit-chat that should attach nothing.

Method. The notes go into a ``RecallIndex`` through the public library path and each message
through ``recall(message)`` with the default settings (gate, ``minScore``, ``perTurn``), as a
host does per user message. Reported per set and per kind:

- must-attach hit rate: the share of attach messages with at least one expected note attached;
- chit-chat quiet rate: the share of the ``nothing`` messages attaching no note;
- mean notes attached per message (attach and nothing messages together).

Baselines in the same run, over the same note text (summary, tags, body) with a naive
tokenisation (lower-cased ``\\w+`` words, no stems, no stop words), plain Okapi BM25 (k1 1.2,
b 0.75, Robertson IDF):

- ``BM25 same count``: BM25's best notes, as many as oharness attached for that message (none
  when oharness attached none), so the quiet rate is oharness's by construction;
- ``BM25 top-1 + threshold``: the best note when its score reaches a threshold set, per set,
  to the lowest that keeps oharness's chit-chat quiet rate (tuned on the set's own chit-chat:
  a generous baseline);
- ``BM25 top-3``: the three best notes, no threshold, to show what plain word overlap finds
  when it may always attach.

The ``five_hundred`` set is 74 hand-written notes (every note a message targets among them)
plus notes from :func:`platform_notes`, a seeded generator of a platform team's notes
(owners, commands, environment variables, incidents, alerts, decisions, runbooks);
``--write-notes`` rewrites those generated notes in the file.

    python bench/recall_developer.py            # all four sets
    python bench/recall_developer.py --quick    # the two small sets, for CI
    python bench/recall_developer.py --misses   # also list the messages each system missed
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oharness.notes.format import Note
from oharness.recall import RecallIndex
from oharness.types import Scope

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "recall" / "developer"
SETS = ("five", "twenty", "fifty", "five_hundred")
QUICK_SETS = SETS[:2]
KINDS = ("words", "paraphrase", "everyday", "cross_language", "typo", "compound")
GENERATED_SEED = 28
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class AttachCase:
    """A message and the notes of which at least one should be attached."""

    message: str
    notes: frozenset[str]
    kind: str


@dataclass(frozen=True)
class NoteSet:
    """One developer's notes, the messages that must attach, the ones that must not."""

    name: str
    notes: list[tuple[Scope, Note]]
    attach: list[AttachCase]
    nothing: list[str]


def load_set(name: str) -> NoteSet:
    """The note set ``tests/data/recall/developer/<name>.json``."""
    raw = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    notes: list[tuple[Scope, Note]] = [
        (
            "user" if item["scope"] == "user" else "project",
            Note(item["id"], item["summary"], item["body"], tuple(item["tags"]), item["type"]),
        )
        for item in raw["notes"]
    ]
    attach = [
        AttachCase(item["message"], frozenset(item["notes"]), item["kind"])
        for item in raw["attach"]
    ]
    return NoteSet(raw["name"], notes, attach, list(raw["nothing"]))


# ---- the baseline ----------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """The naive tokenisation of the baseline: lower-cased word characters."""
    return _WORD.findall(text.lower())


class OkapiBM25:
    """Plain Okapi BM25 (k1 1.2, b 0.75, Robertson IDF) over summary, tags and body."""

    def __init__(self, notes: Sequence[Note], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids = [note.id for note in notes]
        self.counts = [
            Counter(words(f"{note.summary}\n{' '.join(note.tags)}\n{note.body}")) for note in notes
        ]
        lengths = [sum(counts.values()) for counts in self.counts]
        average = sum(lengths) / max(1, len(lengths)) or 1.0
        self.norms = [k1 * (1 - b + b * length / average) for length in lengths]
        frequency: Counter[str] = Counter()
        for counts in self.counts:
            frequency.update(counts.keys())
        total = len(notes)
        self.idf = {t: math.log(1 + (total - df + 0.5) / (df + 0.5)) for t, df in frequency.items()}
        self.k1 = k1

    def rank(self, message: str) -> list[tuple[float, str]]:
        """``(score, id)`` of every note sharing a word with ``message``, best first."""
        terms = [term for term in dict.fromkeys(words(message)) if term in self.idf]
        scored = []
        for position, counts in enumerate(self.counts):
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self.idf[term] * tf * (self.k1 + 1) / (tf + self.norms[position])
            if score > 0:
                scored.append((score, self.ids[position]))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return scored


# ---- measuring -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one system attached for each message of a set (attach messages first)."""

    system: str
    attached: list[list[str]]


@dataclass(frozen=True)
class Figures:
    """A system's figures on a set: hit rates overall and per kind, quiet rate, notes/message."""

    system: str
    hit_rate: float
    quiet_rate: float
    per_message: float
    by_kind: dict[str, tuple[int, int]]  # kind: (hits, messages)
    misses: list[str]


def run_systems(note_set: NoteSet) -> list[Outcome]:
    """oharness recall and the three BM25 baselines on every message of ``note_set``."""
    index = RecallIndex()
    index.add_many(note_set.notes)
    okapi = OkapiBM25([note for _, note in note_set.notes])
    messages = [case.message for case in note_set.attach] + note_set.nothing
    ours = [[hit.id for hit in index.recall(message)] for message in messages]
    ranked = [okapi.rank(message) for message in messages]
    same = [
        [i for _, i in ranking[: len(mine)]] for ranking, mine in zip(ranked, ours, strict=True)
    ]
    top3 = [[i for _, i in ranking[:3]] for ranking in ranked]
    quiet = sum(1 for mine in ours[len(note_set.attach) :] if not mine)
    threshold = quiet_threshold(
        [ranking[0][0] if ranking else 0.0 for ranking in ranked[len(note_set.attach) :]], quiet
    )
    top1 = [[ranking[0][1]] if ranking and ranking[0][0] >= threshold else [] for ranking in ranked]
    return [
        Outcome("oharness", ours),
        Outcome("BM25 same count", same),
        Outcome(f"BM25 top-1 >= {threshold:.2f}", top1),
        Outcome("BM25 top-3", top3),
    ]


def quiet_threshold(top_scores: Sequence[float], quiet: int) -> float:
    """The lowest score threshold under which at least ``quiet`` of ``top_scores`` fall."""
    if quiet <= 0:
        return 0.0
    ordered = sorted(top_scores)
    return math.nextafter(ordered[quiet - 1], math.inf) if ordered[quiet - 1] > 0 else 0.0


def figures(note_set: NoteSet, outcome: Outcome) -> Figures:
    """The hit rate, quiet rate and notes per message of one system on one set."""
    by_kind: dict[str, tuple[int, int]] = {}
    misses: list[str] = []
    attach_part = outcome.attached[: len(note_set.attach)]
    for case, attached in zip(note_set.attach, attach_part, strict=True):
        hit = bool(case.notes & set(attached))
        hits, count = by_kind.get(case.kind, (0, 0))
        by_kind[case.kind] = (hits + hit, count + 1)
        if not hit:
            misses.append(f"[{case.kind}] {case.message!r} -> {attached or 'nothing'}")
    quiet_part = outcome.attached[len(note_set.attach) :]
    for message, attached in zip(note_set.nothing, quiet_part, strict=True):
        if attached:
            misses.append(f"[nothing] {message!r} -> {attached}")
    hits = sum(hits for hits, _ in by_kind.values())
    return Figures(
        outcome.system,
        hits / max(1, len(note_set.attach)),
        sum(1 for attached in quiet_part if not attached) / max(1, len(quiet_part)),
        sum(map(len, outcome.attached)) / max(1, len(outcome.attached)),
        by_kind,
        misses,
    )


def print_table(results: dict[str, list[Figures]], sets: dict[str, NoteSet]) -> None:
    """Per set, each system's hit rate, quiet rate, notes per message and hit rate per kind."""
    kinds = " ".join(f"{kind[:10]:>10}" for kind in KINDS)
    header = f"{'set':<18} {'system':<20} {'attach':>6} {'quiet':>6} {'n/msg':>5}  {kinds}"
    print(header)
    print("-" * len(header))
    for name, rows in results.items():
        note_set = sets[name]
        counts = Counter(case.kind for case in note_set.attach)
        label = f"{name} ({len(note_set.notes)})"
        sizes = " ".join(f"{'n=' + str(counts[kind]):>10}" for kind in KINDS)
        print(
            f"{label:<18} {'messages':<20} {len(note_set.attach):>6} {len(note_set.nothing):>6}"
            f" {'':>5}  {sizes}"
        )
        for row in rows:
            cells = " ".join(
                f"{row.by_kind[kind][0] / row.by_kind[kind][1]:10.2f}"
                if kind in row.by_kind
                else f"{'-':>10}"
                for kind in KINDS
            )
            print(
                f"{'':<18} {row.system:<20} {row.hit_rate:6.3f} {row.quiet_rate:6.3f}"
                f" {row.per_message:5.2f}  {cells}"
            )
    print()


def print_overall(results: dict[str, list[Figures]], sets: dict[str, NoteSet]) -> None:
    """All sets together, per kind: hits over messages for each system."""
    print("All sets together (hits / messages)")
    systems = ("oharness", "BM25 same", "BM25 top-1", "BM25 top-3")
    header = f"{'kind':<15} " + " ".join(f"{system:>10}" for system in systems)
    print(header)
    print("-" * len(header))
    for kind in (*KINDS, "all", "quiet"):
        cells = []
        for column in range(len(systems)):
            hits = count = 0
            for name, rows in results.items():
                row = rows[column]
                if kind == "quiet":
                    count += len(sets[name].nothing)
                    hits += round(row.quiet_rate * len(sets[name].nothing))
                else:
                    for found, total in (
                        row.by_kind.values() if kind == "all" else [row.by_kind.get(kind, (0, 0))]
                    ):
                        hits, count = hits + found, count + total
            cells.append(f"{f'{hits}/{count}':>10}")
        print(f"{kind:<15} {' '.join(cells)}")
    print()


# ---- the generated notes of the five_hundred set ---------------------------------------------

#: Each team's services.
_SERVICES = {
    "Identity": ("auth-gateway", "sso-bridge", "user-profile", "session-store"),
    "Commerce": ("billing-core", "order-router", "inventory-sync", "tax-engine", "coupon-service"),
    "Messaging": ("notification-hub", "email-renderer", "sms-sender", "webhook-relay"),
    "Search": ("search-indexer", "query-planner", "autocomplete"),
    "Media": ("media-transcoder", "image-resizer", "asset-cdn"),
    "Data Infra": (
        "feature-store",
        "event-collector",
        "warehouse-loader",
        "report-builder",
        "pdf-export",
    ),
    "Growth": ("recommendations", "ab-testing", "referral-engine"),
    "Core Platform": (
        "audit-log",
        "config-service",
        "schedule-runner",
        "rate-limiter",
        "geo-lookup",
        "tenant-admin",
    ),
    "Risk": ("risk-scorer", "kyc-checks"),
    "Developer Experience": ("ci-runners", "dev-portal", "build-cache"),
}
_OWNED = [(service, team) for team, services in _SERVICES.items() for service in services]
#: Each team's people, its lead first (as in the hand-written note on team leads).
_TEAMS = {
    "Identity": ("Hana", "Björn", "Leilani"),
    "Commerce": ("Rafael", "Amara", "Dario"),
    "Messaging": ("Elif", "Gustavo"),
    "Search": ("Chen Wei", "Farah", "Ivo"),
    "Media": ("Ugo", "Mateus"),
    "Data Infra": ("Nadia", "Jonas", "Sanna"),
    "Growth": ("Valeria", "Quentin"),
    "Core Platform": ("Oskar", "Priya", "Zofia"),
    "Risk": ("Tariq", "Yusuf"),
    "Developer Experience": ("Kemi", "Mateus", "Jonas"),
}
#: Stores a service can run locally with docker compose.
_STORES = ("Postgres", "MySQL", "Redis", "Kafka", "Elasticsearch", "ClickHouse", "RabbitMQ")
_FAILURES = [
    "returned 500s for 40 minutes",
    "a stale cache served old prices",
    "dropped events during a deploy",
    "ran out of database connections",
    "filled the disk with debug logs",
    "sent duplicate notifications",
    "leaked memory until the pods were OOM-killed",
    "timed out on every request from one region",
]
_CAUSES = [
    "a config change without a canary",
    "an expired TLS certificate",
    "a missing index on a new query",
    "a retry storm from a client library upgrade",
    "a schema change that was not backward compatible",
    "a cron job started twice",
    "a DNS change in the VPC",
    "a noisy neighbour on the node",
]
_METRICS = [
    "p99 latency above 800 ms",
    "error rate above 2%",
    "queue lag above 10,000 messages",
    "CPU above 85% for 15 minutes",
    "fewer than 2 healthy pods",
    "disk usage above 80%",
]
_CONVENTIONS = [
    "handlers return typed errors, never bare strings",
    "every public endpoint has a contract test",
    "SQL lives in queries/*.sql, not inline in Go code",
    "background jobs must be idempotent",
    "timeouts are set per call, never left at the client default",
    "new config keys need a default and a line in the README",
    "log lines carry the request id",
    "feature work goes behind a flag first",
]
_REASONS = [
    "the managed service cost three times as much",
    "we kept hitting its connection limit",
    "nobody on the team knew how to operate it",
    "its client library was abandoned",
    "it could not do cross-region replication",
]
#: (symptom, first action) of a runbook.
_SYMPTOMS = (
    ("requests pile up in the queue", "scale the consumers to 6 replicas, then find the slow call"),
    ("the health check flaps", "check the readiness probe timeout before restarting pods"),
    ("memory grows steadily", "take a heap profile with `make pprof` and compare with last week"),
    ("a deploy is stuck", "roll back with `atlas rollback <service>`, read the canary analysis"),
    ("one tenant is slow", "look at the per-tenant dashboard and its rate-limit overrides"),
)


#: kind: (note type, summary, body), formatted with the values of :func:`_values`.
_TEMPLATES = {
    "owner": (
        "reference",
        "{service} is owned by the {team} team; ask {person} first",
        "Code in services/{service}/. Channel #team-{team_slug}.\n"
        "{person} knows the history; {other} is the backup while {person} is away.",
    ),
    "run-locally": (
        "reference",
        "Run {service} locally with `make -C services/{service} dev` (port {port})",
        "It needs {store} from `docker compose up {store_slug}`.\n"
        "Seed data: `make -C services/{service} seed`. Hot reload is on by default.",
    ),
    "env": (
        "reference",
        "{service} reads {env} from the environment",
        "Set in `deploy/{service}/values.yaml` per environment; the default is fine for local "
        "work.\nChanging it in production needs a restart of all pods.",
    ),
    "incident": (
        "project",
        "Incident {year}: {service} {failure}",
        "Root cause: {cause}.\nFollow-ups are tracked in the postmortem "
        "(docs/postmortems/{year}-{service}.md); {person} led the review.",
    ),
    "alert": (
        "reference",
        "{service} alert: {metric} pages {team}",
        "Thresholds are in `monitoring/{service}.rules.yml`.\n"
        "Silence for planned maintenance in Alertmanager, with a comment and an end time.",
    ),
    "convention": (
        "feedback",
        "In {service}, {convention}",
        "Agreed in the {team} guild in {year}. Reviewers point to this note.",
    ),
    "moved": (
        "project",
        "{service} moved from {store2} to {store} in {year}",
        "Why: {reason}.\nThe old {store2} tables are read-only until the audit, then dropped.",
    ),
    "runbook": (
        "reference",
        "Runbook {service}: when {symptom}",
        "First {action}.\nIf that does not help within 15 minutes, page {team} and open an "
        "incident channel.",
    ),
}
#: How many notes of a kind one service may have; one for the kinds not listed.
_PER_SERVICE = {"incident": 4, "alert": 2, "convention": 3}


def _values(rng: random.Random, service: str, team: str) -> dict[str, str]:
    """The names and details one generated note of ``service`` may use."""
    person, other = rng.sample(_TEAMS[team], 2)
    store, store2 = rng.sample(_STORES, 2)
    symptom, action = rng.choice(_SYMPTOMS)
    setting = rng.choice(("TIMEOUT_MS", "POOL_SIZE", "CACHE_TTL", "WORKERS", "BATCH_SIZE"))
    return {
        "service": service,
        "team": team,
        "team_slug": team.lower().replace(" ", "-"),
        "person": person,
        "other": other,
        "store": store,
        "store2": store2,
        "store_slug": store.lower(),
        "env": f"{service.upper().replace('-', '_')}_{setting}",
        "year": str(rng.choice((2023, 2024, 2025, 2026))),
        "port": str(rng.randint(8000, 9900)),
        "failure": rng.choice(_FAILURES),
        "cause": rng.choice(_CAUSES),
        "metric": rng.choice(_METRICS),
        "convention": rng.choice(_CONVENTIONS),
        "reason": rng.choice(_REASONS),
        "symptom": symptom,
        "action": action,
    }


def platform_notes(count: int, seed: int = GENERATED_SEED) -> list[dict[str, Any]]:
    """``count`` notes a platform team writes about its services, as set-file entries."""
    rng = random.Random(seed)
    notes: list[dict[str, Any]] = []
    made: Counter[tuple[str, str]] = Counter()
    summaries: set[str] = set()
    while len(notes) < count:
        service, team = rng.choice(_OWNED)
        kind = rng.choice(list(_TEMPLATES))
        if made[service, kind] >= _PER_SERVICE.get(kind, 1):
            continue
        note_type, summary_template, body_template = _TEMPLATES[kind]
        values = _values(rng, service, team)
        summary = summary_template.format(**values)
        if summary in summaries:
            continue
        made[service, kind] += 1
        summaries.add(summary)
        digest = hashlib.sha256(f"{seed}:{len(notes)}".encode()).hexdigest()[:3]
        tags = [service, kind, values["team_slug"]]
        notes.append(
            {
                "id": f"{service}-{kind}-{digest}",
                "scope": "project",
                "type": note_type,
                "summary": summary,
                "body": body_template.format(**values),
                "tags": tags,
            }
        )
    return notes


def is_generated(note_id: str) -> bool:
    """Whether ``note_id`` has the shape of an id :func:`platform_notes` makes."""
    services = "|".join(re.escape(service) for service, _ in _OWNED)
    slugs = "|".join(_TEMPLATES)
    return re.fullmatch(f"(?:{services})-(?:{slugs})-[0-9a-f]{{3}}", note_id) is not None


def write_generated_notes(name: str = "five_hundred", total: int = 500) -> None:
    """Rewrite the generated notes of a set file, keeping its hand-written ones first."""
    path = DATA / f"{name}.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    hand = [note for note in raw["notes"] if not is_generated(note["id"])]
    raw["notes"] = hand + platform_notes(total - len(hand))
    lines = ",\n".join(f"    {json.dumps(note, ensure_ascii=False)}" for note in raw["notes"])
    attach = ",\n".join(f"    {json.dumps(case, ensure_ascii=False)}" for case in raw["attach"])
    nothing = ",\n".join(f"    {json.dumps(text, ensure_ascii=False)}" for text in raw["nothing"])
    text = (
        f'{{\n  "name": {json.dumps(raw["name"])},\n'
        f'  "about": {json.dumps(raw["about"], ensure_ascii=False)},\n'
        f'  "notes": [\n{lines}\n  ],\n  "attach": [\n{attach}\n  ],\n'
        f'  "nothing": [\n{nothing}\n  ]\n}}\n'
    )
    path.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="the two small sets")
    parser.add_argument("--misses", action="store_true", help="list what each system missed")
    parser.add_argument(
        "--write-notes", action="store_true", help="rewrite the generated notes of five_hundred"
    )
    args = parser.parse_args(argv)
    if args.write_notes:
        write_generated_notes()
    names = QUICK_SETS if args.quick else SETS
    sets = {name: load_set(name) for name in names}
    results: dict[str, list[Figures]] = {}
    for name, note_set in sets.items():
        results[name] = [figures(note_set, outcome) for outcome in run_systems(note_set)]
    print("Per-message recall on developer note sets (default settings) beside Okapi BM25")
    print("attach: must-attach hit rate; quiet: chit-chat attaching nothing; n/msg: notes")
    print("attached per message; kind columns: must-attach hit rate of that kind\n")
    print_table(results, sets)
    print_overall(results, sets)
    if args.misses:
        for name, rows in results.items():
            for row in rows[:2]:
                print(f"{name}: {row.system} missed")
                for line in row.misses:
                    print(f"  {line}")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
