"""Every term prepared at once answers exactly as the terms computed lazily.

Once a version of the postings has served enough messages, the recall table computes every
term together (:mod:`oharness.recall.prepared`): a term the base holds unchanged from the
base's arrays, a term changed since the base, or added after it, from its own. Whatever the
history - a first build, a cache load, edits before or after preparing, a removed note, a note
with new words, no base at all - each term's scores and every recall must be those of the lazy
path, to the bit, and a version that has served one message never prepares.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from recall_helpers import realistic_notes, synthetic_notes

from oharness.notes.format import Note
from oharness.recall import accumulate
from oharness.recall.accumulate import TermScores, TermTable
from oharness.recall.cache import read_cache, write_cache
from oharness.recall.index import RecallIndex
from oharness.recall.prepared import PREPARE_SHARE
from oharness.types import Scope

Notes = list[tuple[Scope, Note]]


def folder() -> Notes:
    return realistic_notes(60) + synthetic_notes(60, seed=11)


def messages(notes: Notes) -> list[str]:
    """Messages naming notes' topics, with body words and chit-chat between them."""
    said = []
    for number, (_, note) in enumerate(notes):
        words = note.body.split()
        said.append(f"{note.summary} {' '.join(words[number % 7 : number % 7 + 12])}")
        if number % 5 == 0:
            said.append("thanks, run the tests again please")
    return said


def keys(notes: Notes) -> dict[tuple[Scope, str], tuple[int, int, int]]:
    return {(scope, note.id): (n, len(note.body), 3) for n, (scope, note) in enumerate(notes)}


def table(index: RecallIndex) -> TermTable:
    return index._recall_table


def prepare(index: RecallIndex, said: list[str]) -> int:
    """Recall ``said`` until the recall table prepares; how many messages it took."""
    for number, message in enumerate(said, 1):
        index.recall(message)
        if table(index).prepared is not None:
            return number
    raise AssertionError("the table never prepared")


def hits(index: RecallIndex, said: list[str]) -> list[list[tuple[tuple[Scope, str], float]]]:
    return [[(hit.key, hit.score) for hit in index.recall(message)] for message in said]


def lazy_twin(build: Callable[[], RecallIndex]) -> RecallIndex:
    """The same index, its recall table never preparing."""
    twin = build()
    table(twin)._prepare = False
    return twin


def _same(first: TermScores | None, second: TermScores | None) -> bool:
    if first is None or second is None:
        return first is second
    for a, b in zip(first, second, strict=True):
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            if a.dtype != b.dtype or not np.array_equal(a, b):
                return False
        elif a != b and not (a is None and b is None):
            return False
    return True


def assert_terms_as_lazy(index: RecallIndex) -> None:
    """Each term of the vocabulary (and one none holds) scores as a lazy table computes it."""
    postings = index._postings
    prepared = table(index)
    assert prepared.prepared is not None
    lazy = TermTable(postings, index.params, index._weights, tagged=False)
    terms = [*postings.terms, "zzz-absent"]
    answers = prepared.get_many(terms)
    for start in range(0, len(terms), 40):
        batch = terms[start : start + 40]
        for term, got, wanted in zip(
            batch, answers[start : start + 40], lazy.get_many(batch), strict=True
        ):
            assert _same(got, wanted), term
    assert any(part is not None and part.dense is not None for part in answers)  # both forms


def edit(index: RecallIndex, notes: Notes) -> None:
    """Notes replaced (new words and old), removed, and one added with words none had."""
    for number, (scope, note) in enumerate(notes[::9]):
        if number % 3 == 0:
            index.remove(scope, note.id)
        else:
            index.update(scope, note.with_changes(summary=f"{note.summary} rollback canary"))
    index.add("project", Note("qux-zebra", "Quxfrobnicator zebra deploys", "Zorbly quux."))


HISTORIES = [
    "built",
    "loaded",
    "loaded, some notes stale",
    "edited before preparing",
    "edited after preparing",
    "removed",
]


def _index(history: str, notes: Notes, path: Path) -> RecallIndex:
    built = RecallIndex()
    built.add_many(notes, keys(notes))
    if history.startswith("loaded"):
        write_cache(path, built)
        loaded = RecallIndex()
        current = keys(notes)
        stale = {key: (0, 0, 0) for key in list(current)[::4]} if "stale" in history else {}
        assert read_cache(path, loaded, {**current, **stale}) == set(stale)
        if stale:  # the base lacks them (terms none of its notes holds), then they are added
            assert not loaded._postings.base.gapless  # type: ignore[union-attr]
            loaded.add_many([(scope, note) for scope, note in notes if (scope, note.id) in stale])
        return loaded
    if history == "edited before preparing":
        edit(built, notes)
    if history == "edited after preparing":
        prepare(built, messages(notes))
        edit(built, notes)
    if history == "removed":
        scope, note = notes[3]
        assert built.remove(scope, note.id)
    return built


@pytest.mark.parametrize("history", HISTORIES)
def test_prepared_recall_answers_as_lazy(history: str, tmp_path: Path) -> None:
    notes = folder()
    said = messages(notes)
    index = _index(history, notes, tmp_path / "a.bin")
    twin = lazy_twin(lambda: _index(history, notes, tmp_path / "b.bin"))
    taken = prepare(index, said)
    for message in said[:taken]:
        twin.recall(message)
    assert hits(index, said) == hits(twin, said)
    assert any(hits(index, said))  # the messages attach notes
    assert table(twin).prepared is None
    assert_terms_as_lazy(index)


def test_terms_changed_or_added_after_the_base_are_prepared_from_their_own_arrays() -> None:
    notes = folder()
    said = messages(notes)
    index = RecallIndex()
    index.add_many(notes)
    edit(index, notes)
    prepare(index, said)
    assert_terms_as_lazy(index)
    postings = index._postings
    base = postings.base
    assert base is not None and len(postings.terms) > base.term_count  # words added later
    assert postings.changed  # and base terms changed
    found = index.recall("quxfrobnicator zebra")
    assert [hit.id for hit in found] == ["qux-zebra"]


def test_a_version_prepares_after_a_share_of_the_base_never_on_its_first_recall() -> None:
    notes = folder()
    said = messages(notes)
    index = RecallIndex()
    index.add_many(notes)
    index.recall(said[0])
    assert table(index).prepared is None  # the first recall of a new index
    assert prepare(index, said) > 1
    recalled = table(index)
    assert recalled._lazy * PREPARE_SHARE >= recalled._postings_to_prepare()
    before = hits(index, said[:20])
    scope, note = notes[0]
    index.update(scope, note.with_changes(summary=note.summary + " zzedit"))
    assert recalled.prepared is None  # an edit: the values of every term moved
    index.recall(said[1])
    assert recalled.prepared is None  # the first recall after an edit stays lazy
    index.update(scope, note)
    assert hits(index, said[:20]) == before


def test_a_base_larger_than_the_table_bound_is_never_prepared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notes = folder()
    index = RecallIndex()
    index.add_many(notes)
    monkeypatch.setattr(accumulate, "TABLE_VALUES", 1_000)
    for message in messages(notes):
        index.recall(message)
    assert table(index).prepared is None


def test_a_base_mostly_changed_since_is_prepared_from_the_terms_own_arrays() -> None:
    notes = folder()
    said = messages(notes)
    index, twin = RecallIndex(), RecallIndex()
    for each in (index, twin):
        each.add_many(notes)
        for scope, note in notes:  # every note replaced: its terms now have arrays of their own
            each.update(scope, note.with_changes(body=note.body + " revised"))
    table(twin)._prepare = False
    prepare(index, said)
    assert hits(index, said) == hits(twin, said)
    assert_terms_as_lazy(index)


def test_an_index_built_note_by_note_prepares_too() -> None:
    notes = folder()
    said = messages(notes)
    index, twin = RecallIndex(), RecallIndex()
    for scope, note in notes:
        index.add(scope, note)
        twin.add(scope, note)
    assert index._postings.base is None
    table(twin)._prepare = False
    prepare(index, said)
    assert hits(index, said) == hits(twin, said)
    assert_terms_as_lazy(index)
