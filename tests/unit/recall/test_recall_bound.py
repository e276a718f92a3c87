"""The recall gate's bounds leave out only notes that cannot pass (oharness.recall.candidates).

Before reading tags, phrases and bodies the gate drops the notes with a long body that fail
whatever their phrases and strongest word, and skips the body words of a short note whose
score proves they cannot make up what it lacks. The answers must be those of the gate that
reads everything: checked over many realistic messages, and the bound itself over any
numbers.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recall_helpers import (
    Calibration,
    load_chitchat,
    realistic_notes,
    synthetic_notes,
)

from oharness.notes.format import Note
from oharness.recall import gate, judge, surface
from oharness.recall.candidates import Candidates, positions
from oharness.recall.index import RecallIndex
from oharness.recall.judge import Judge
from oharness.settings import RecallSettings
from oharness.types import Scope

_WEIGHT = st.floats(min_value=0.0, max_value=12.0, allow_nan=False)


@settings(max_examples=500, deadline=None)
@given(
    overlap=st.floats(min_value=0.0, max_value=1.0),
    topic=_WEIGHT,
    said=_WEIGHT,
    lowered=st.one_of(st.just(1.0), st.floats(min_value=0.0, max_value=1.0)),
    phrase=st.booleans(),
    strongest=st.floats(min_value=0.0, max_value=1.0),
)
def test_a_note_that_passes_is_never_left_out_by_the_bound(
    overlap: float, topic: float, said: float, lowered: float, phrase: bool, strongest: float
) -> None:
    # Whatever lowers the shared weight afterwards (the stem-only rule), whatever the phrase
    # and the strongest word: a note passing the gate may pass by the bound.
    shared = overlap * (topic + min(said, gate.MESSAGE_MASS_CAP)) / 2.0
    arrays = (np.array([shared * lowered]), np.array([topic]), said)
    passed = gate.passes_many(*arrays, np.array([phrase]), np.array([strongest]))
    assert not passed[0] or gate.may_pass_many(np.array([shared]), np.array([topic]), said)[0]


def test_no_note_among_many_random_ones_passes_where_the_bound_says_it_cannot() -> None:
    rng = np.random.default_rng(7)
    count = 200_000
    topic = rng.random(count) * 12.0
    for said in (0.5, 1.0, 2.5, 5.0, 6.0, 9.0):
        shared = rng.random(count) * (topic + min(said, gate.MESSAGE_MASS_CAP)) / 2.0
        lowered = np.where(rng.random(count) < 0.5, 1.0, rng.random(count))
        phrase = rng.random(count) < 0.5
        strongest = np.where(
            rng.random(count) < 0.5, rng.random(count), 0.9 + rng.random(count) / 10
        )
        passed = gate.passes_many(shared * lowered, topic, said, phrase, strongest)
        may = gate.may_pass_many(shared, topic, said)
        assert passed.any()
        assert not (passed & ~may).any()
        assert (~may).sum() > count // 10  # and the bound leaves notes out


def test_the_bound_holds_at_the_edges_of_every_gate() -> None:
    # Shared weights just at the overlap each gate needs, the rare-word share and the
    # shared gate, where a multiplication and a division round differently.
    cap = gate.MESSAGE_MASS_CAP
    cases: list[tuple[float, float, float]] = []
    for topic in (0.0, 0.37, 1.0, 2.9, 7.3, 40.0):
        for said in (0.0, 0.84, 1.3, 5.99, 6.0, 11.0):
            denominator = topic + min(said, cap)
            for needed in (gate.PHRASE_OVERLAP_GATE, gate.OVERLAP_GATE, gate.EVERYDAY_OVERLAP_GATE):
                edge = needed * denominator / 2.0
                cases += [(np.nextafter(edge, -1.0), topic, said), (edge, topic, said)]
                cases.append((np.nextafter(edge, 99.0), topic, said))
            rare = gate.MESSAGE_SHARE * min(said, cap)
            cases += [(np.nextafter(rare, -1.0), topic, said), (rare, topic, said)]
            cases += [
                (gate.SHARED_GATE, topic, said),
                (np.nextafter(gate.SHARED_GATE, 0), topic, said),
            ]
    shareds = np.array([case[0] for case in cases])
    topics = np.array([case[1] for case in cases])
    for said in {case[2] for case in cases}:
        at = np.array([case[2] == said for case in cases])
        may = gate.may_pass_many(shareds[at], topics[at], said)
        for phrase in (False, True):
            for strongest in (0.0, gate.DISTINCTIVE, gate.RARE, 1.0):
                passed = gate.passes_many(
                    shareds[at],
                    topics[at],
                    said,
                    np.full(int(at.sum()), phrase),
                    np.full(int(at.sum()), strongest),
                )
                assert not (passed & ~may).any()


#: Notes whose summary words a message may meet through their stem only (spec 03.2), and
#: messages that do, beside their own words or not.
_STEMS = [
    Note("express-1", "Express sessions are kept in Redis", "x.", ("express", "sessions")),
    Note("regex-1", "Regular expressions are compiled once at start", ""),
    Note("deploys-1", "Deploys happen on Tuesdays", "Release train.", ("release",)),
    Note("uploader-1", "The uploader retries large files in chunks", ""),
    Note("config-1", "Configuration of the importer lives in one file", "", ("importer",)),
]
_STEM_MESSAGES = [
    "which expression matches the sessions in Redis",
    "the deployment on Tuesday was late",
    "deployments and the release train",
    "is the express regular expression compiled once",
    "uploads of large files retry in chunks",
    "configure the importer configuration file",
    "express the configuration once at start",
]


def _folder() -> list[tuple[Scope, Note]]:
    # Short notes a team would write, beside long ones of many everyday words.
    stems: list[tuple[Scope, Note]] = [("project", note) for note in _STEMS]
    return realistic_notes(600, seed=11) + synthetic_notes(400, seed=12) + stems


def _messages(
    notes: list[tuple[Scope, Note]], calibration: Calibration, count: int
) -> Iterator[str]:
    """Messages of every kind the gate meets: the calibration set's, chit-chat, and
    messages made of a note's summary words and body words, alone or with other words."""
    rng = random.Random(13)
    yield from _STEM_MESSAGES
    yield from (message for message, _ in calibration.attach)
    yield from calibration.nothing
    yield from load_chitchat()
    for _ in range(count):
        _, note = rng.choice(notes)
        summary = note.summary.split()
        body = note.body.split()
        _, other = rng.choice(notes)
        parts = [
            rng.sample(summary, min(len(summary), rng.randint(1, 3))),
            rng.sample(body, min(len(body), rng.randint(0, 6))),
            rng.sample(other.body.split(), min(len(other.body.split()), rng.randint(0, 25))),
        ]
        words = [word for part in parts for word in part]
        rng.shuffle(words)
        yield " ".join(words)


def _answers(index: RecallIndex, messages: list[str]) -> list[list[tuple[str, str, float]]]:
    settings = RecallSettings(per_turn=3)
    return [
        [(hit.scope, hit.id, hit.score) for hit in index.recall(message, settings=settings)]
        for message in messages
    ]


def _everything(shared: npt.NDArray[np.float64], topic: object, said: object) -> object:
    return np.ones(len(shared), dtype=np.bool_)


def _unbounded(self: Judge) -> npt.NDArray[np.float64]:
    return np.full(len(self._postings.entries_by_slot()), 1e300)


def _same_as_unbounded(
    index: RecallIndex, messages: list[str], monkeypatch: pytest.MonkeyPatch
) -> list[list[tuple[str, str, float]]]:
    """The answers of ``index``, checked equal to those of the gate with no bound: every
    candidate judged on its tags and phrases, every retried short note's body read."""
    bounded = _answers(index, messages)
    with monkeypatch.context() as patch:
        patch.setattr(gate, "may_pass_many", _everything)
        patch.setattr(Judge, "_body_bounds", _unbounded)
        patch.setattr(judge, "_STRONG", 0.0)  # every note's strongest word read
        full = _answers(index, messages)
    assert bounded == full
    return full


def test_the_bounded_gate_answers_as_the_gate_reading_every_candidate(
    calibration: Calibration, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = _folder() + calibration.notes
    index = RecallIndex()
    index.add_many(notes)
    messages = list(_messages(notes, calibration, 1200))
    kept: list[int] = []
    weakened: list[bool] = []
    judged, weaken = Judge.candidates, surface.weaken_stem_only

    def counted(self: Judge, *arguments: object) -> Candidates | None:
        found = judged(self, *arguments)  # type: ignore[arg-type]
        kept.append(len(found) if found is not None else 0)
        return found

    def noted(*arguments: object) -> npt.NDArray[np.bool_] | None:
        stay = weaken(*arguments)  # type: ignore[arg-type]
        weakened.append(stay is not None)
        return stay

    with monkeypatch.context() as patch:
        patch.setattr(Judge, "candidates", counted)
        patch.setattr(surface, "weaken_stem_only", noted)
        full = _same_as_unbounded(index, messages, monkeypatch)
    # The messages exercise the gate: many attach a note, many do not, the bound leaves
    # every candidate out of many of them, and some meet notes through a stem only.
    attached = sum(1 for found in full if found)
    assert attached > len(messages) // 4
    assert len(messages) - attached > len(messages) // 10
    assert kept.count(0) > 50
    assert weakened.count(True) >= 5
    # After edits (bodies made long or short, notes removed) the bounds follow the notes.
    rng = random.Random(17)
    for scope, note in rng.sample(notes, 150):
        body = note.body + " and so on" * 40 if len(note.body) < 400 else note.summary
        index.update(scope, Note(note.id, note.summary, body, note.tags, note.type))
    for scope, note in rng.sample(notes, 50):
        index.remove(scope, note.id)
    _same_as_unbounded(index, messages, monkeypatch)


def test_candidate_positions_follow_a_selection() -> None:
    slots = np.array([2, 5, 9, 14], dtype=np.int32)
    where = positions(slots, 20)
    one = np.ones(4)
    candidates = Candidates(
        slots, np.array([True, False, True, False]), one, one, (one, one), 1.0, where
    )
    holders = np.array([0, 5, 14, 14, 19], dtype=np.int32)
    assert candidates.among(holders).tolist() == [1, 3, 3]
    assert candidates.flags(holders).tolist() == [False, True, False, True]
    chosen = candidates.select(np.array([False, True, True, False]))
    assert chosen.slots.tolist() == [5, 9]
    assert chosen.short.tolist() == [False, True]
    assert chosen.among(holders).tolist() == [0]
    assert chosen.flags(np.array([9, 2], dtype=np.int32)).tolist() == [False, True]
    assert (chosen.where >= 0).sum() == 2
