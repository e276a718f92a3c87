"""Helpers for the recall tests: the calibration set and synthetic filler notes."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex
from oharness.recall.postings import NoteEntry
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


def _list(text: str) -> list[str]:
    return text.split(",")


def load_chitchat() -> list[str]:
    """The ordinary coding-session messages of ``tests/data/recall/chitchat.json``."""
    raw = json.loads((DATA / "chitchat.json").read_text(encoding="utf-8"))
    return list(raw["messages"])


_AREAS = _list(
    "reports page,admin panel,settings page,profile page,audit log,notifications,mailer,"
    "importer,exporter,webhook worker,billing service,auth service,gateway,"
    "inventory sync,order history,tax engine,ledger,reconciliation job,"
    "file uploader,image proxy,search indexer,metrics pipeline,session store,queue consumer,"
    "coupon engine,referral program,status page,help center,chat widget,"
    "calendar view,kanban board,timeline,comment threads,mentions,activity feed,team page,"
    "api client,cli tool,sdk,mobile app,desktop app,browser extension,data warehouse,"
    "etl job,feature store,recommendation service,fraud checks,rate limiter,cache layer,"
    "config loader,secrets manager,deploy script,load balancer,dns records,vpn,"
    "build pipeline,test harness,fixtures,mock server,load tests,error pages,sitemap"
)
_TOOLS = _list(
    "Redis,Kafka,RabbitMQ,Postgres,MySQL,SQLite,Elasticsearch,OpenSearch,Terraform,Ansible,"
    "Kubernetes,Helm,Nginx,Caddy,Traefik,Grafana,Prometheus,Datadog,Honeycomb,OpenTelemetry,"
    "Django,FastAPI,Flask,Rails,Express,NestJS,Next.js,Remix,SvelteKit,Vue,Angular,Storybook,"
    "Playwright,Cypress,Jest,pytest,tox,nox,Poetry,uv,Webpack,Vite,esbuild,Babel,ESLint,"
    "Prettier,Black,Ruff,mypy,pyright,GraphQL,gRPC,protobuf,OpenAPI,Swagger,Sidekiq,Airflow,"
    "dbt,Snowflake,BigQuery,Looker,Metabase,Sentry,PagerDuty,Opsgenie,Vault,Consul,Minio"
)
_QUALITIES = _list(
    "timeouts,retries,caching,naming,sorting,filtering,validation,"
    "permissions,error handling,versioning,backfills,"
    "encoding,compression,batching,locking,ordering,"
    "idempotency,deduplication,alerting,dashboards,tracing,sampling,cleanup,archiving"
)
_PEOPLE = _list("Priya,Tomás,Mei,Jonas,Aisha,Lukas,Sofia,Kenji,Olu,Marta,Dev,Inès,Wen,Sam")
_DAYS = _list("Monday,Tuesday,Wednesday,Thursday,Friday")
_SUMMARIES = (
    "The {area} uses {tool} for {quality}",
    "{tool} {quality} for the {area} are configured in config/{slug}.yaml",
    "Do not touch the {area} {quality} without asking {person}",
    "{person} owns the {area}; ask them about {quality}",
    "The {area} must not call {tool} directly",
    "Moved the {area} from {tool} to {tool2} in {year}",
    "{quality} in the {area}: decided on {tool} after the {year} outage",
    "Check the {area} dashboard in {tool} before changing {quality}",
    "The {area} runs its {quality} job every {day}",
    "Known issue: {quality} in the {area} breaks when {tool} restarts",
    "{tool} version for the {area} is pinned; upgrade together with {tool2}",
    "The {area} keeps {quality} settings per workspace",
)
_SENTENCES = (
    "We tried {tool2} first but it did not handle {quality} well.",
    "{person} set this up in {year} and still reviews changes to it.",
    "The runbook is in docs/runbooks/{slug}.md.",
    "If it breaks, page the on-call engineer and post in the team channel.",
    "This came up again during the {day} planning meeting.",
    "Tests for it live next to the code and run on every pull request.",
    "Keep the defaults; most customers never change them.",
    "There is a ticket to revisit this next quarter.",
    "Staging uses the same setup with smaller limits.",
    "The numbers are in the {tool} dashboard for the {area}.",
    "Ask before changing it: two other teams depend on the current behaviour.",
    "It was slow at first, so we added a cache in front of it.",
)


def realistic_notes(count: int, seed: int = 3) -> list[tuple[Scope, Note]]:
    """Filler notes a team would write: summaries and bodies from realistic templates.

    Areas, tools, concerns, people and days of a software team combine into decisions,
    constraints and references, so everyday and technical words recur as they do in a real
    note folder. Ids start with ``filler-``.
    """
    rng = random.Random(seed)
    notes: list[tuple[Scope, Note]] = []
    for number in range(count):
        area, quality = rng.choice(_AREAS), rng.choice(_QUALITIES)
        tool, tool2 = rng.sample(_TOOLS, 2)
        values = {
            "area": area,
            "quality": quality,
            "tool": tool,
            "tool2": tool2,
            "person": rng.choice(_PEOPLE),
            "day": rng.choice(_DAYS),
            "year": str(rng.randint(2019, 2026)),
            "slug": area.replace(" ", "-"),
        }
        summary = rng.choice(_SUMMARIES).format(**values)
        summary = summary[:1].upper() + summary[1:]
        body = " ".join(s.format(**values) for s in rng.sample(_SENTENCES, rng.randint(2, 6)))
        tags = tuple(dict.fromkeys((values["slug"], tool.lower(), quality.replace(" ", "-"))))
        scope: Scope = "project" if number % 3 else "user"
        notes.append((scope, Note(f"filler-{number:05d}", summary, body, tags)))
    return notes


def index_entries(index: RecallIndex) -> tuple[list[str], list[NoteEntry]]:
    """The vocabulary (terms still in use, in id order) and every note's indexed form."""
    postings = index._postings
    entries = postings.entries_at(list(postings.slot_of.values()))
    vocabulary = postings.vocabulary
    used = np.flatnonzero(postings.held[: len(vocabulary)] > 0)
    remap = np.full(len(vocabulary), -1, dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    terms = [vocabulary[term_id] for term_id in used.tolist()]
    return terms, [entry._replace(term_ids=remap[entry.term_ids]) for entry in entries]
