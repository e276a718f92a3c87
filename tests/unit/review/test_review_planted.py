"""The same-topic grouping on the planted-duplicates set (spec 05.1): >= 95 % of planted
groups found exactly, <= 5 % false groups; ``bench/review_quality.py`` prints the figures."""

from __future__ import annotations

import json
from pathlib import Path

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex
from oharness.review.findings import ScopeNotes, review_notes
from oharness.settings import RecallSettings

DATA = Path(__file__).resolve().parents[2] / "data" / "review" / "planted.json"


def test_planted_groups_are_found_and_distinct_topics_stay_apart() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    notes = [
        Note(id=n["id"], summary=n["summary"], body=n["body"], tags=tuple(n["tags"]))
        for n in data["notes"]
    ]
    group_of = {n["id"]: n["group"] for n in data["notes"]}
    index = RecallIndex.from_settings(RecallSettings(languages=tuple(data["languages"])))
    findings = review_notes(
        ScopeNotes(
            scope="project",
            scope_key="project:planted",
            notes=notes,
            terms=[index.summary_terms(note) for note in notes],
            known_ids={note.id for note in notes},
            last_recalled={},
            now=0,
        )
    )
    reported = [set(f.notes) for f in findings if f.kind == "same-topic"]
    planted: dict[str, set[str]] = {}
    for note_id, group in group_of.items():
        if group is not None:
            planted.setdefault(group, set()).add(note_id)
    found = sum(1 for members in planted.values() if members in reported)
    false = [
        g
        for g in reported
        if len({group_of[i] for i in g}) != 1 or None in {group_of[i] for i in g}
    ]
    assert found / len(planted) >= 0.95
    assert len(false) / len(reported) <= 0.05
