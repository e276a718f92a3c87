"""The default gate and minScore behave alike at a handful of notes and among thousands.

The set lives in ``tests/data/recall/``: ``calibration.json`` holds the notes a coding agent and
its user write for a web product (many spelled in everyday words; English with some French,
Chinese and Japanese), messages that must attach a given note and messages that must attach
nothing; ``chitchat.json`` the ordinary messages of a coding session. Both are checked on the
calibration notes alone and embedded among realistic filler notes of the same kind of team.

The bars (figures: ``python bench/recall_quality.py``): at every size, up to 10,000 notes,
every "must attach" message attaches its note, and at least 97% of the chit-chat and of the
"must attach nothing" messages attach nothing.
"""

from __future__ import annotations

import pytest
from recall_helpers import Calibration, load_chitchat, realistic_notes, synthetic_notes

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex

QUIET_SHARE = 0.97
NOTHING_SHARE = 0.97


def missed(index: RecallIndex, calibration: Calibration) -> list[str]:
    return [
        f"{message!r} should attach {note_id}, got {[hit.id for hit in index.recall(message)]}"
        for message, note_id in calibration.attach
        if note_id not in [hit.id for hit in index.recall(message)]
    ]


def noisy(index: RecallIndex, messages: list[str]) -> list[str]:
    return [
        f"{message[:50]!r} should attach nothing, got {[hit.id for hit in index.recall(message)]}"
        for message in messages
        if index.recall(message)
    ]


def check(index: RecallIndex, calibration: Calibration) -> None:
    assert missed(index, calibration) == []
    chitchat = load_chitchat()
    noise = noisy(index, chitchat)
    assert len(noise) <= (1 - QUIET_SHARE) * len(chitchat), noise
    noise = noisy(index, calibration.nothing)
    assert len(noise) <= round((1 - NOTHING_SHARE) * len(calibration.nothing)), noise


def test_calibration_set_is_substantial(calibration: Calibration) -> None:
    assert len(calibration.notes) >= 90
    assert len(calibration.attach) + len(calibration.nothing) >= 300
    assert len(load_chitchat()) >= 200
    ids = {note.id for _, note in calibration.notes}
    assert {note_id for _, note_id in calibration.attach} <= ids


def test_calibration_notes_alone(calibration: Calibration) -> None:
    index = RecallIndex()
    index.add_many(calibration.notes)
    check(index, calibration)


@pytest.mark.parametrize("filler", [50, 500])
def test_calibration_among_realistic_notes(calibration: Calibration, filler: int) -> None:
    index = RecallIndex()
    index.add_many(realistic_notes(filler))
    index.add_many(calibration.notes)
    check(index, calibration)


@pytest.mark.slow
@pytest.mark.parametrize("filler", [5_000, 10_000])
def test_calibration_among_thousands_of_realistic_notes(
    calibration: Calibration, filler: int
) -> None:
    index = RecallIndex()
    index.add_many(realistic_notes(filler))
    index.add_many(calibration.notes)
    check(index, calibration)


@pytest.mark.slow
def test_calibration_among_five_thousand_synthetic_notes(calibration: Calibration) -> None:
    index = RecallIndex()
    index.add_many(synthetic_notes(5_000))
    index.add_many(calibration.notes)
    check(index, calibration)


@pytest.mark.parametrize("filler", [0, 5, 50, 500])
def test_a_topic_in_everyday_words_attaches_at_every_size(filler: int) -> None:
    index = RecallIndex()
    index.add_many(realistic_notes(filler))
    index.add("project", Note("cards-3fa", "Pricing cards use fills, not borders", "Fill only."))
    index.add("project", Note("deploy-9a0", "Deploys happen on Tuesdays", "Release train."))
    assert [hit.id for hit in index.recall("how should I style the pricing cards?")] == [
        "cards-3fa"
    ]
    assert index.recall("thanks, looks good") == []
    assert index.recall("run the tests again") == []


def test_the_attached_note_ranks_first_for_most_messages(calibration: Calibration) -> None:
    index = RecallIndex()
    index.add_many(calibration.notes)
    first = sum(
        1
        for message, note_id in calibration.attach
        if [hit.id for hit in index.recall(message)][:1] == [note_id]
    )
    assert first >= 0.85 * len(calibration.attach)


def test_a_topic_word_many_bodies_use_still_names_the_note() -> None:
    # "depend" is in a third of the bodies, but only one note is about dependencies: the
    # gate weighs a topic word by the notes holding it in their summary or tags.
    index = RecallIndex()
    index.add_many(realistic_notes(2_000))
    index.add_many(
        ("project", Note(f"team-{n}", f"Team {n} owns its area", "Two teams depend on it."))
        for n in range(300)
    )
    index.add("project", Note("deps-a09", "Ask before adding a new dependency", "Why, size."))
    assert "deps-a09" in [hit.id for hit in index.recall("can I add lodash as a new dependency?")]
    assert index.recall("we depend on you") == []


def test_a_passing_note_behind_many_higher_scoring_failing_ones_attaches() -> None:
    # Fifteen long notes score higher on the message's words, mostly in their bodies; their
    # long summaries hold the words but are about something else (the overlap is too small):
    # every candidate is judged, not only the best few.
    index = RecallIndex()
    index.add_many(realistic_notes(100))
    padding = " ".join(f"step{number}" for number in range(80))
    for number in range(15):
        body = "The pricing cards and the style of the pricing cards. " * 4 + padding
        summary = (
            f"Cards {number}: quarterly revenue, churn, cohorts, forecasts, margins, budgets "
            "and pricing experiments for the finance board"
        )
        index.add("project", Note(f"decoy-{number:02d}", summary, body))
    index.add("project", Note("cards-3fa", "Pricing cards use fills, not borders", "Fill."))
    found = index.recall("how should I style the pricing cards?")
    assert [hit.id for hit in found] == ["cards-3fa"]
