"""Per-message recall on four developer note sets: the sets are sound and recall does not regress.

``tests/data/recall/developer/`` holds four developers' project memories as a coding agent saves
them: ``five`` (a small CLI tool), ``twenty`` (a mobile app), ``fifty`` (a payments API) and
``five_hundred`` (a platform team's monorepo), some notes in German, French, Spanish or Chinese.
Each set lists messages a person types with the note(s) that should be attached, labelled by
kind (shared words, paraphrase, everyday words, another language, typo, compound word), and
chit-chat that should attach nothing. Figures beside Okapi BM25:
``python bench/recall_developer.py``.

The target is that at least 90 % of the must-attach messages attach one of their notes and at
least 97 % of the chit-chat attaches nothing, in every set. Measured on 2026-12-06 with the
default settings, must-attach / quiet: five 0.312 / 1.000, twenty 0.562 / 0.923, fifty 0.545 /
1.000, five_hundred 0.544 / 0.941 (0.250, 0.469, 0.473 and 0.515 before compound words and
typos were read); far from the target on must-attach. The floors below are those figures (the
quiet target itself where it already holds), so recall cannot get worse than today unnoticed.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from oharness.notes.format import Note
from oharness.recall import RecallIndex
from oharness.types import Scope

DATA = Path(__file__).resolve().parents[2] / "data" / "recall" / "developer"
SIZES = {"five": 5, "twenty": 20, "fifty": 50, "five_hundred": 500}
KINDS = {"words", "paraphrase", "everyday", "cross_language", "typo", "compound"}
NOTE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*-[0-9a-f]{3}")
#: must-attach hit rate and chit-chat quiet rate measured on 2026-12-07.
MEASURED = {
    "five": (0.562, 1.000),
    "twenty": (0.812, 0.923),
    "fifty": (0.727, 1.000),
    "five_hundred": (0.691, 0.941),
}
QUIET_TARGET = 0.97


@dataclass(frozen=True)
class Measured:
    hit_rate: float
    quiet_rate: float
    missed: list[str]
    noisy: list[str]


def load(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def _notes(raw: dict) -> list[tuple[Scope, Note]]:
    return [
        (
            "user" if item["scope"] == "user" else "project",
            Note(item["id"], item["summary"], item["body"], tuple(item["tags"]), item["type"]),
        )
        for item in raw["notes"]
    ]


def measure(raw: dict) -> Measured:
    index = RecallIndex()
    index.add_many(_notes(raw))
    missed = []
    for case in raw["attach"]:
        attached = {hit.id for hit in index.recall(case["message"])}
        if not attached & set(case["notes"]):
            missed.append(f"[{case['kind']}] {case['message']!r} -> {sorted(attached)}")
    noisy = [
        f"{message!r} -> {[hit.id for hit in hits]}"
        for message in raw["nothing"]
        if (hits := index.recall(message))
    ]
    return Measured(
        1 - len(missed) / len(raw["attach"]),
        1 - len(noisy) / len(raw["nothing"]),
        missed,
        noisy,
    )


@pytest.fixture(scope="module")
def measured() -> dict[str, Measured]:
    return {name: measure(load(name)) for name in SIZES}


@pytest.mark.parametrize("name", SIZES)
def test_set_is_well_formed(name: str) -> None:
    raw = load(name)
    notes = raw["notes"]
    ids = [note["id"] for note in notes]
    assert len(notes) == SIZES[name]
    assert len(set(ids)) == len(ids)
    for note in notes:
        assert NOTE_ID.fullmatch(note["id"]), note["id"]
        assert note["scope"] in {"project", "user"}
        assert note["type"] in {"user", "feedback", "project", "reference"}
        assert note["summary"].strip() and "\n" not in note["summary"]
        assert 1 <= len(note["body"].splitlines()) <= 6, note["id"]
        assert note["tags"]
    minimum = 25 if SIZES[name] >= 50 else 12
    assert len(raw["attach"]) >= minimum
    assert len(raw["nothing"]) >= 10
    for case in raw["attach"]:
        assert case["kind"] in KINDS, case
        assert case["notes"] and set(case["notes"]) <= set(ids), case
    assert {case["kind"] for case in raw["attach"]} == KINDS


@pytest.mark.parametrize("name", SIZES)
def test_must_attach_does_not_regress(name: str, measured: dict[str, Measured]) -> None:
    figures = measured[name]
    assert figures.hit_rate >= MEASURED[name][0] - 0.001, figures.missed


@pytest.mark.parametrize("name", SIZES)
def test_chitchat_stays_quiet(name: str, measured: dict[str, Measured]) -> None:
    figures = measured[name]
    floor = QUIET_TARGET if MEASURED[name][1] >= QUIET_TARGET else MEASURED[name][1] - 0.001
    assert figures.quiet_rate >= floor, figures.noisy


def _index(*notes: tuple[str, str, tuple[str, ...]]) -> RecallIndex:
    index = RecallIndex()
    filler = [
        ("project", Note(f"filler-{n:03x}", f"Filler topic {word}", "Body.\n", (word,), "project"))
        for n, word in enumerate(("invoices", "mobile", "search", "billing", "onboarding"))
    ]
    index.add_many(
        [
            ("project", Note(i, summary, "See the runbook.\n", tags, "project"))
            for i, summary, tags in notes
        ]
        + filler
    )
    return index


def test_a_compound_written_in_one_word_meets_its_parts() -> None:
    index = _index(
        ("flags-a01", "Feature flags come from Remote Config", ("config",)),
        ("crash-a02", "Crash reports go to Sentry", ("monitoring",)),
        ("oncall-a03", "On-call rota: weekly, handover Monday", ("pagerduty",)),
    )
    assert [hit.id for hit in index.recall("our featureflags are stuck on")] == ["flags-a01"]
    assert [hit.id for hit in index.recall("crashreports are not showing up")] == ["crash-a02"]
    assert [hit.id for hit in index.recall("who is oncall this week?")] == ["oncall-a03"]


def test_a_compound_a_note_hyphenates_is_met_written_as_one_word() -> None:
    # The stem of "loadbalancer" or "deployfenster" takes more than an inflection from it
    # ("loadbalanc", "deployfenst"): the note's compound must count as that word said whole.
    index = _index(
        ("lb-a01", "Load-Balancer health checks hit /healthz every 10 s", ("infra",)),
        ("deploy-a02", "Deploy-Fenster: Produktion nur Montag bis Donnerstag", ("regeln",)),
        ("rate-a03", "Rate-Limiter allows 100 requests per minute per key", ("api",)),
    )
    found = index.recall("are the loadbalancer health checks failing?")
    assert [hit.id for hit in found] == ["lb-a01"]
    assert [hit.id for hit in index.recall("is the deployfenster open today?")] == ["deploy-a02"]
    assert [hit.id for hit in index.recall("what does the ratelimiter allow?")] == ["rate-a03"]


def test_words_written_apart_meet_the_compound_a_note_writes_as_one() -> None:
    index = _index(
        ("exit-a01", "Errors go to stderr; status 2 for bad usage", ("cli", "exit-codes")),
        ("deps-a02", "Prefers the standard library", ("dependencies",)),
    )
    assert [hit.id for hit in index.recall("which exit code for a bad flag?")] == ["exit-a01"]


def test_a_compound_meets_parts_a_summary_names_apart() -> None:
    # "test" is a session word: "test fixtures" is no phrase of the summary, yet its two
    # words are in it.
    index = _index(
        ("fixtures-a01", "Large test fixtures are generated by a script", ("tests",)),
        ("lint-a02", "Linting runs in pre-commit, not in CI", ("lint",)),
    )
    found = index.recall("regenerate the testfixtures before running pytest")
    assert [hit.id for hit in found] == ["fixtures-a01"]
    assert index.recall("the testament of the script") == []


def test_a_compound_written_as_two_words_counts_once_in_the_message() -> None:
    # "post mortem" is read as "postmortem"; its two words, which no note holds, each weighed
    # as a rare word beside it, so among 50 notes the note was too small a part of the message.
    notes = [note for scope, note in _notes(load("fifty"))]
    summary = "Postmortems go in docs/postmortems with a timeline and action items"
    index = RecallIndex()
    index.add_many(
        ("project", note) for note in [*notes, Note("pm-a01", summary, "", ("incidents",))]
    )
    assert "pm-a01" in [hit.id for hit in index.recall("post mortem template")]


def test_a_typo_is_read_as_the_word_notes_name_a_topic_with() -> None:
    index = _index(
        ("android-a01", "Android keystore lives in 1Password", ("signing",)),
        ("terraform-a02", "Terraform is applied only by Atlantis", ("infrastructure",)),
    )
    assert [hit.id for hit in index.recall("where is the andriod keystore?")] == ["android-a01"]
    assert [hit.id for hit in index.recall("teraform plan shows drift")] == ["terraform-a02"]


def test_a_letter_typed_twice_or_once_too_few_is_read_as_the_word() -> None:
    index = _index(
        ("commit-a01", "Commit messages follow Conventional Commits", ("git",)),
        ("success-a02", "Success metrics live in the growth dashboard", ("metrics",)),
        ("filler-a03", "Release on Tuesdays", ("release",)),
    )
    assert [hit.id for hit in index.recall("how do I word this comit message")] == ["commit-a01"]
    assert [hit.id for hit in index.recall("where are the sucesss metrics?")] == ["success-a02"]


@pytest.mark.parametrize("pasted", ["acgt" * 5_000, "-".join("a" * 20_000), "q" * 60_000])
def test_a_pasted_run_of_letters_is_not_read_as_a_word(pasted: str) -> None:
    # Reading a word as two words or a typo costs time growing with the square of its length:
    # a DNA sequence or a long run of letters pasted into a message took minutes.
    index = _index(("deploy-a01", "Deploy with atlas deploy from main", ("deploy",)))
    started = time.monotonic()
    assert [hit.id for hit in index.recall(f"{pasted} how do I deploy with atlas?")] == [
        "deploy-a01"
    ]
    assert time.monotonic() - started < 5.0


def test_a_real_word_a_letter_away_from_a_note_word_is_not_a_typo() -> None:
    # "track" is one letter from "trick", "refund" from "redund(ant)": only two letters
    # swapped, or a letter doubled or undoubled, is read at any length; other edits from
    # eight letters.
    index = _index(
        ("track-a01", "Track screen views after consent", ("analytics",)),
        ("refund-a02", "Refund window is 30 days", ("refunds",)),
    )
    assert index.recall("nice trick") == []
    assert index.recall("that check is redundant") == []
