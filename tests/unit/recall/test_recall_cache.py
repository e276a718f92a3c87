"""The derived index cache: same answers after a reload, and never a stale entry."""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from recall_helpers import synthetic_notes

from oharness.errors import StorageError
from oharness.notes.format import Note
from oharness.recall import cache, tokenize
from oharness.recall.cache import read_cache, write_cache
from oharness.recall.index import RecallIndex
from oharness.recall.postings import CacheKey, NoteKey
from oharness.recall.tokenize import Tokenizer
from oharness.types import Scope

Built = tuple[RecallIndex, Path, dict[NoteKey, CacheKey]]
NOTES = synthetic_notes(120, seed=4)
QUERIES = [note.summary for _, note in NOTES[:15]]


def keys_of(notes: list[tuple[Scope, Note]]) -> dict[NoteKey, CacheKey]:
    # Stands in for (mtime_ns, size, inode) of each file.
    return {
        (scope, note.id): (1_700_000_000 + n, len(note.body), n)
        for n, (scope, note) in enumerate(notes)
    }


def answers(index: RecallIndex) -> list[list[tuple[str, str, float]]]:
    return [
        [(hit.scope, hit.id, round(hit.score, 9)) for hit in index.search(query, 10)]
        for query in QUERIES
    ]


@pytest.fixture
def built(tmp_path: Path) -> tuple[RecallIndex, Path, dict[NoteKey, CacheKey]]:
    index = RecallIndex()
    keys = keys_of(NOTES)
    index.add_many(NOTES, keys)
    path = tmp_path / "state" / "recall-index.bin"
    assert write_cache(path, index) == len(NOTES)
    return index, path, keys


def test_a_reload_answers_like_the_original(built: Built) -> None:
    index, path, keys = built
    restored = RecallIndex()
    assert read_cache(path, restored, keys) == set()
    assert len(restored) == len(NOTES)
    assert answers(restored) == answers(index)
    assert restored.recall(QUERIES[0]) == index.recall(QUERIES[0])


def test_a_changed_key_is_never_used(built: Built) -> None:
    _, path, keys = built
    scope, note = NOTES[3]
    changed = dict(keys)
    changed[(scope, note.id)] = (1, 2, 3)
    restored = RecallIndex()
    assert read_cache(path, restored, changed) == {(scope, note.id)}
    assert (scope, note.id) not in restored
    edited = note.with_changes(summary="Completely different words now")
    restored.add(scope, edited, cache_key=(1, 2, 3))
    fresh = RecallIndex()
    fresh.add_many([(s, edited if (s, n.id) == (scope, note.id) else n) for s, n in NOTES])
    assert answers(restored) == answers(fresh)


def test_new_and_deleted_notes(built: Built) -> None:
    _, path, keys = built
    current = dict(keys)
    gone = (NOTES[0][0], NOTES[0][1].id)
    del current[gone]
    current[("user", "brand-new-1aa")] = (9, 9, 9)
    restored = RecallIndex()
    assert read_cache(path, restored, current) == {("user", "brand-new-1aa")}
    assert gone not in restored
    assert len(restored) == len(NOTES) - 1


def test_a_tokeniser_change_invalidates_everything(
    built: Built, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path, keys = built
    assert read_cache(path, RecallIndex(Tokenizer(["english", "french"])), keys) == set(keys)
    monkeypatch.setattr(tokenize, "TOKENIZER_VERSION", tokenize.TOKENIZER_VERSION + 1)
    restored = RecallIndex()
    assert read_cache(path, restored, keys) == set(keys)
    assert len(restored) == 0


def test_a_format_change_invalidates_everything(
    built: Built, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path, keys = built
    monkeypatch.setattr(cache, "CACHE_FORMAT", cache.CACHE_FORMAT + 1)
    assert read_cache(path, RecallIndex(), keys) == set(keys)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: b"not a cache at all",
        lambda data: b"",
        lambda data: marshal.dumps({"magic": "oharness-recall-cache", "format": 1}),
    ],
)
def test_a_damaged_file_only_costs_a_rebuild(
    built: Built, damage: Callable[[bytes], bytes]
) -> None:
    _, path, keys = built
    path.write_bytes(damage(path.read_bytes()))
    restored = RecallIndex()
    assert read_cache(path, restored, keys) == set(keys)
    assert len(restored) == 0


def test_tampered_arrays_are_refused(built: Built) -> None:
    _, path, keys = built
    payload = marshal.loads(path.read_bytes())
    payload["order"] = payload["order"][4:] + payload["order"][:4]  # no longer sorted by term
    path.write_bytes(marshal.dumps(payload))
    assert read_cache(path, RecallIndex(), keys) == set(keys)


def test_a_missing_file_means_everything_is_missing(tmp_path: Path) -> None:
    keys = keys_of(NOTES[:3])
    assert read_cache(tmp_path / "absent.bin", RecallIndex(), keys) == set(keys)


def test_only_notes_with_a_key_are_cached(tmp_path: Path) -> None:
    index = RecallIndex()
    index.add_many(NOTES[:5], keys_of(NOTES[:2]))
    assert write_cache(tmp_path / "c.bin", index) == 2


def test_reading_into_a_non_empty_index(built: Built) -> None:
    index, path, keys = built
    restored = RecallIndex()
    extra = Note("extra-note-1ab", "Kubernetes cluster lives in eu-west-1", "")
    restored.add("user", extra)
    assert read_cache(path, restored, keys) == set()
    index.add("user", extra)
    assert answers(restored) == answers(index)


def test_writes_are_atomic_and_leave_no_temp_files(
    built: Built, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, path, _ = built
    before = path.read_bytes()
    index.add("user", Note("another-2bc", "Another note", "body"), cache_key="sha256:x")

    def failing_replace(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(StorageError):
        write_cache(path, index)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
