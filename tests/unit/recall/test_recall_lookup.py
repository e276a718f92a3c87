"""The batched first look-ups answer exactly as one term at a time.

A message's new terms are looked up together (:meth:`Postings.lookup_many`,
:meth:`Postings.slots_of_ids`), the gate's phrases and tags in one pass (:class:`HeldTable`),
and their scores computed together (:class:`TermTable`). Whatever the batch - a first build, a
cache load, after edits, terms no note holds, repeats - each term's answer must be the one it
gets alone, to the bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from recall_helpers import realistic_notes, synthetic_notes

from oharness.notes.format import Note
from oharness.recall.accumulate import TermScores, TermTable
from oharness.recall.cache import read_cache, write_cache
from oharness.recall.held import Held, HeldTable
from oharness.recall.index import RecallIndex
from oharness.recall.postings import Postings
from oharness.recall.tags import TAG_MARK, UNUSED_TAG_MARK
from oharness.recall.tokenize import PHRASE_MARK
from oharness.types import Scope

Notes = list[tuple[Scope, Note]]


def notes() -> Notes:
    return realistic_notes(60) + synthetic_notes(60, seed=11)


def keys(folder: Notes) -> dict[tuple[Scope, str], tuple[int, int, int]]:
    return {(scope, note.id): (n, len(note.body), 3) for n, (scope, note) in enumerate(folder)}


def edited(index: RecallIndex, folder: Notes) -> RecallIndex:
    """``index`` after replacing, removing and adding notes (terms gain and lose notes)."""
    for number, (scope, note) in enumerate(folder[::7]):
        if number % 3 == 0:
            index.remove(scope, note.id)
        else:
            index.update(scope, note.with_changes(summary=f"{note.summary} deploy rollback"))
    index.add("project", Note("pricing-cards", "Pricing cards use fills, not borders", "x"))
    return index


@pytest.fixture(params=["built", "loaded", "edited after a load"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> RecallIndex:
    folder = notes()
    built = RecallIndex()
    built.add_many(folder, keys(folder))
    if request.param == "built":
        return built
    path = tmp_path / "recall.bin"
    write_cache(path, built)
    loaded = RecallIndex()
    assert read_cache(path, loaded, keys(folder)) == set()
    return loaded if request.param == "loaded" else edited(loaded, folder)


def asked(postings: Postings) -> list[str]:
    """Words, phrases and marks some note holds, terms none holds, and repeats."""
    held = postings.terms[::3]
    absent = ["zzz-absent", PHRASE_MARK + "no such", TAG_MARK + "nothing", ""]
    return held[:40] + absent + held[:5] + held[40:200:7] + absent[:2]


def test_many_terms_at_once_are_each_as_alone(index: RecallIndex) -> None:
    postings = index._postings
    terms = asked(postings)
    for size in (1, 2, 4, 5, 13, len(terms)):  # a slice per term, and the arranged gather
        batch = terms[:size]
        found = postings.lookup_many(batch)
        alone = [postings.lookup(term) for term in batch]
        # In any order (the terms read before come after those gathered now), each once.
        assert sorted(found.positions) == [n for n, hit in enumerate(alone) if hit is not None]
        for number, position in enumerate(found.positions):
            start, end = found.bounds[number], found.bounds[number + 1]
            expected = alone[position]
            assert expected is not None
            assert np.array_equal(found.slots[start:end], expected[0])
            assert np.array_equal(found.frequencies[start:end], expected[1])
            assert found.frequencies.dtype == np.float32
        assert found.bounds[-1] == len(found.slots) == len(found.frequencies)


def test_slots_of_ids_are_each_as_alone(index: RecallIndex) -> None:
    postings = index._postings
    ids = [postings.vocabulary[term] for term in asked(postings) if term in postings.vocabulary]
    for term_id, slots in zip(ids, postings.slots_of_ids(ids), strict=True):
        alone = postings.lookup(postings.terms[term_id])
        if alone is None:
            assert slots is None
        else:
            assert slots is not None and np.array_equal(slots, alone[0])


def _held_alone(postings: Postings, term: str) -> Held:
    """What the gate's table must answer for ``term``, from single look-ups."""
    tag = postings.lookup(TAG_MARK + term)
    unused = postings.lookup(UNUSED_TAG_MARK + term) if tag is not None else None
    if term[:1] == PHRASE_MARK:
        term_id, phrase = None, postings.lookup(term)
    else:
        term_id, phrase = postings.vocabulary.get(term), None
    if phrase is None and tag is None:
        return Held(term_id, None, None, None)
    return Held(
        term_id,
        None if phrase is None else phrase[0],
        None if tag is None else tag[0],
        None if unused is None else unused[0],
    )


def test_the_gates_table_answers_each_term_as_alone(index: RecallIndex) -> None:
    postings = index._postings
    tags = [t[1:] for t in postings.terms if t[:1] == TAG_MARK][:30]
    phrases = [t for t in postings.terms if t[:1] == PHRASE_MARK][:30]
    assert tags and phrases  # the folder has whole tags and summary phrases
    terms = tags + phrases + asked(postings)[:60] + tags[:3]
    table = HeldTable(postings, TAG_MARK, UNUSED_TAG_MARK)
    for answer, term in zip(table.get_many(terms), terms, strict=True):
        expected = _held_alone(postings, term)
        assert answer.term_id == expected.term_id
        for got, wanted in zip(answer[1:], expected[1:], strict=True):
            if got is None or wanted is None:
                assert got is wanted, term
            else:
                assert np.array_equal(got, wanted), term


def _same(first: TermScores | None, second: TermScores | None) -> bool:
    if first is None or second is None:
        return first is second
    return all(
        (a is None and b is None)
        or (not isinstance(a, np.ndarray) and a == b)
        or (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b))
        for a, b in zip(first, second, strict=True)
    )


@pytest.mark.parametrize("tagged", [False, True])
def test_scores_computed_together_are_those_computed_alone(
    index: RecallIndex, tagged: bool
) -> None:
    postings = index._postings
    words = [t for t in postings.terms if t[:1].isalnum()]
    common = sorted(words, key=lambda t: -postings.document_frequency(postings.vocabulary[t]))
    terms = common[:3] + words[::5][:80] + ["zzz-absent"] + common[:2]
    together = TermTable(postings, index.params, index._weights, tagged=tagged)
    alone = TermTable(postings, index.params, index._weights, tagged=tagged)
    batch = together.get_many(terms)
    assert any(part is not None and part.dense is not None for part in batch)  # both forms
    for term, part in zip(terms, batch, strict=True):
        single = alone.get_many([term])[0]
        assert _same(part, single), term
        assert _same(part, together.get_many([term])[0])  # kept as computed


def test_entries_restored_with_their_order_answer_as_the_index_they_came_from() -> None:
    folder = notes()
    built = RecallIndex()
    built.add_many(folder)
    terms, entries = built.entries()
    ids = np.concatenate([entry.term_ids for entry in entries])
    restored = RecallIndex()
    restored.restore(terms, entries, np.argsort(ids, kind="stable").astype(np.int32))
    texts = [note.summary for _, note in folder[::4]]
    for text in texts:
        assert [(h.key, h.score) for h in restored.recall(text)] == [
            (h.key, h.score) for h in built.recall(text)
        ]
        assert restored.search(text, 5) == built.search(text, 5)
    assert any(built.recall(text) for text in texts)
