"""The default minScore behaves alike at ~50 notes and among thousands (spec 03.2).

The set lives in ``tests/data/recall/calibration.json``: notes of a product team in English
with a few French, Chinese and Japanese ones, messages that must attach a given note, and
ordinary messages that must attach nothing.
"""

from __future__ import annotations

import pytest
from recall_helpers import Calibration, synthetic_notes

from oharness.recall.index import RecallIndex


def failures(index: RecallIndex, calibration: Calibration) -> list[str]:
    problems: list[str] = []
    for message, note_id in calibration.attach:
        attached = [hit.id for hit in index.recall(message)]
        if note_id not in attached:
            problems.append(f"{message!r} should attach {note_id}, got {attached}")
    for message in calibration.nothing:
        attached = [hit.id for hit in index.recall(message)]
        if attached:
            problems.append(f"{message!r} should attach nothing, got {attached}")
    return problems


def test_calibration_set_is_substantial(calibration: Calibration) -> None:
    assert len(calibration.notes) >= 40
    assert len(calibration.attach) >= 40
    assert len(calibration.nothing) >= 30
    ids = {note.id for _, note in calibration.notes}
    assert {note_id for _, note_id in calibration.attach} <= ids


def test_default_threshold_on_the_calibration_notes_alone(calibration: Calibration) -> None:
    index = RecallIndex()
    index.add_many(calibration.notes)
    assert failures(index, calibration) == []


@pytest.mark.slow
def test_default_threshold_among_five_thousand_notes(calibration: Calibration) -> None:
    index = RecallIndex()
    index.add_many(synthetic_notes(5_000))
    index.add_many(calibration.notes)
    assert failures(index, calibration) == []


def test_the_attached_note_ranks_first_for_most_messages(calibration: Calibration) -> None:
    index = RecallIndex()
    index.add_many(calibration.notes)
    first = sum(
        1
        for message, note_id in calibration.attach
        if [hit.id for hit in index.recall(message)][:1] == [note_id]
    )
    assert first >= 0.9 * len(calibration.attach)
