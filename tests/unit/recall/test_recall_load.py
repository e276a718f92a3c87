"""A loaded index answers as the index it was saved from, before and after edits, to the bit.

The cache load adopts every note as flat arrays (:mod:`oharness.recall.postings`) and keeps what
changes later beside them; a first build does the same. These tests compare every answer -
attached notes, search results, scores as exact floats - of an index built from notes with one
loaded from its cache, then after the same edits on both.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from recall_helpers import load_calibration, realistic_notes, synthetic_notes

from oharness.notes.format import Note
from oharness.recall import tokenize
from oharness.recall.cache import read_cache, write_cache
from oharness.recall.index import RecallIndex
from oharness.recall.postings import CacheKey, NoteKey
from oharness.recall.tokenize import Tokenizer
from oharness.types import Scope

Notes = list[tuple[Scope, Note]]


def keys_of(notes: Notes) -> dict[NoteKey, CacheKey]:
    return {(scope, note.id): (n, len(note.body), 7) for n, (scope, note) in enumerate(notes)}


def folder() -> Notes:
    calibration = load_calibration()
    return realistic_notes(90) + synthetic_notes(40, seed=9) + calibration.notes


def messages(notes: Notes) -> list[str]:
    calibration = load_calibration()
    asked = [message for message, _ in calibration.attach[:40]] + calibration.nothing[:10]
    return asked + [note.summary for _, note in notes[::9]]


def exact(index: RecallIndex, texts: list[str]) -> list[list[tuple[str, str, str]]]:
    """Every recall and search answer, scores as exact floats."""
    found = [index.recall(text) for text in texts] + [index.search(text, 10) for text in texts]
    return [[(hit.scope, hit.id, float(hit.score).hex()) for hit in hits] for hits in found]


def edit(index: RecallIndex, notes: Notes) -> None:
    """Replace, remove and add notes, as a day of work would."""
    for number, (scope, note) in enumerate(notes[::11]):
        if number % 2:
            index.remove(scope, note.id)
        else:
            index.add(scope, note.with_changes(summary=f"{note.summary} revised{number}"))
    index.add("project", Note("pricing-cards-1", "Pricing cards use fills, not borders", "x"))
    index.add_many(
        [("user", Note(f"later-{n}", f"Later note {n} about caching", "")) for n in range(3)]
    )


@pytest.fixture
def saved(tmp_path: Path) -> tuple[RecallIndex, Path, Notes]:
    notes = folder()
    index = RecallIndex()
    index.add_many(notes, keys_of(notes))
    path = tmp_path / "recall-index.bin"
    write_cache(path, index)
    return index, path, notes


def test_a_loaded_index_answers_to_the_bit_as_the_one_saved(saved) -> None:
    index, path, notes = saved
    loaded = RecallIndex()
    assert read_cache(path, loaded, keys_of(notes)) == set()
    texts = messages(notes)
    assert exact(loaded, texts) == exact(index, texts)
    assert any(loaded.recall(text) for text in texts)  # the comparison covers attachments


def test_edits_after_a_load_answer_as_the_same_edits_after_a_build(saved) -> None:
    index, path, notes = saved
    loaded = RecallIndex()
    read_cache(path, loaded, keys_of(notes))
    texts = messages(notes)
    exact(loaded, texts)  # the topic weights computed before the edits, as in a session
    exact(index, texts)
    edit(loaded, notes)
    edit(index, notes)
    assert sorted(loaded.keys()) == sorted(index.keys())
    assert exact(loaded, texts) == exact(index, texts)
    assert "pricing-cards-1" in [hit.id for hit in loaded.recall("pricing cards fills borders")]


def test_a_removed_note_is_gone_from_every_term_and_dead_slots_are_reclaimed(saved) -> None:
    _, path, notes = saved
    loaded = RecallIndex()
    read_cache(path, loaded, keys_of(notes))
    scope, note = notes[5]
    assert any(hit.id == note.id for hit in loaded.search(note.summary, 5))
    assert loaded.remove(scope, note.id)
    assert all(hit.id != note.id for hit in loaded.search(note.summary, 50))
    loaded.add(scope, Note("in-its-place", "Kubernetes cluster lives in eu-west-1", ""))
    assert [hit.id for hit in loaded.search("kubernetes eu-west-1", 1)] == ["in-its-place"]
    for removed_scope, removed in notes[10:150]:
        loaded.remove(removed_scope, removed.id)
    assert len(loaded._postings.keys) - len(loaded) <= 64  # the base was made again


def test_a_partly_stale_cache_loads_the_rest_as_a_build_would(saved) -> None:
    _, path, notes = saved
    keys = keys_of(notes)
    stale = [(scope, note.id) for scope, note in notes[3::7]]
    for key in stale:
        keys[key] = (0, 0, 0)
    loaded = RecallIndex()
    assert read_cache(path, loaded, keys) == set(stale)
    fresh = RecallIndex()
    fresh.add_many([(s, n) for s, n in notes if (s, n.id) not in set(stale)])
    texts = messages(notes)
    assert exact(loaded, texts) == exact(fresh, texts)


def test_counting_is_the_same_when_the_chunk_memo_fills_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = [f"{note.summary}\n{note.body}" for _, note in folder()]
    texts += ["getUserName run_tests.py gen-itgc The APIs PDFs", "重跑gen-itgc后 数据库 café"]
    expected = [Tokenizer(["english", "french"]).counts(text) for text in texts]
    monkeypatch.setattr(tokenize, "_MAX_CACHED_CHUNKS", 40)  # emptied every few texts
    small = Tokenizer(["english", "french"])
    for text, counts in zip(texts, expected, strict=True):
        found = small.counts(text)
        assert list(found.items()) == list(counts.items())
        assert small.tokens(text)  # the memo of groups and of counts stay in step


def test_counts_keep_each_chunk_term_as_alone() -> None:
    tokenizer = Tokenizer(["english", "french"])
    text = "Pricing pricing PRICING getUserName the of Runs running ran a-b 10:00 colour"
    counts = tokenizer.counts(text)
    alone: dict[str, int] = {}
    for term in tokenizer.tokens(text):
        alone[term] = alone.get(term, 0) + 1
    assert counts == alone and list(counts) == list(alone)


def test_after_a_build_each_terms_slots_ascend_each_note_once() -> None:
    index = RecallIndex()
    index.add_many(folder())
    postings = index._postings
    held = 0
    for term_id in range(len(postings.vocabulary)):
        slots, counts = postings.postings(term_id)
        if len(slots):
            assert np.all(np.diff(slots) > 0)
            assert len(slots) == len(counts) == postings.held[term_id]
            held += 1
    assert held == len(postings.vocabulary)
