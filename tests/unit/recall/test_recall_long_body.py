"""A body written by hand far past ``memory.maxNoteBytes``: only its beginning is indexed."""

from __future__ import annotations

from pathlib import Path

from recall_helpers import synthetic_notes

from oharness.notes.format import Note
from oharness.recall.build import INDEXED_BODY_CHARS
from oharness.recall.cache import read_cache, write_cache
from oharness.recall.index import RecallIndex

#: About 2 MB: a log pasted into a note file by hand. The word "pricing" fills its beginning;
#: "zeppelin" is said only far past the indexed part.
HUGE_BODY = "pricing cards " * 150_000 + "zeppelin hangar " * 20
HUGE = Note(id="huge", summary="Pricing cards notes", body=HUGE_BODY, tags=("design",))
SMALL = Note(id="small", summary="Pricing cards use fills", body="pricing cards zeppelin")


def _indexes(tmp_path: Path) -> tuple[RecallIndex, RecallIndex, RecallIndex]:
    """The same notes added in a batch, one by one, and loaded from a cache of the batch."""
    notes = [("project", HUGE), ("project", SMALL), *synthetic_notes(40, seed=9)]
    keys = {(scope, note.id): (1, len(note.body), n) for n, (scope, note) in enumerate(notes)}
    batch = RecallIndex()
    batch.add_many(notes, keys)
    single = RecallIndex()
    for scope, note in notes:
        single.add(scope, note, cache_key=keys[(scope, note.id)])
    path = tmp_path / "recall.bin"
    write_cache(path, batch)
    loaded = RecallIndex()
    assert read_cache(path, loaded, keys) == set()
    return batch, single, loaded


def test_only_the_beginning_of_a_huge_body_is_indexed(tmp_path: Path) -> None:
    assert len(HUGE_BODY) > 10 * INDEXED_BODY_CHARS
    for index in _indexes(tmp_path):
        found = {hit.id for hit in index.search("zeppelin hangar", 10)}
        assert found == {"small"}  # the huge note's zeppelin lies past what is indexed
        assert "huge" in {hit.id for hit in index.search("pricing cards", 10)}


def test_every_way_of_indexing_it_answers_the_same(tmp_path: Path) -> None:
    """Built at once, note by note and loaded from the cache: the same scores to the last bit
    (the huge body's counts fit the cache's 16-bit frequencies once it is cut)."""
    messages = ["how should I style the pricing cards?", "pricing cards", "zeppelin hangar"]
    answers = [
        [
            [(hit.id, hit.score) for hit in index.search(message, 10)]
            + [(hit.id, hit.score) for hit in index.recall(message)]
            for message in messages
        ]
        for index in _indexes(tmp_path)
    ]
    assert answers[0] == answers[1] == answers[2]
