"""The derived index cache: same answers after a reload, and never a stale entry."""

from __future__ import annotations

import marshal
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from recall_helpers import index_entries, synthetic_notes

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


def _payload(path: Path) -> dict[str, Any]:
    """The cache's content, past its tag and CRC."""
    with path.open("rb") as file:
        payload = cache._load(file)
        assert payload is not None
        return {
            name: bytes(value) if isinstance(value, memoryview) else value
            for name, value in payload.items()
            if name != "at"
        }


def _rewrite(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` as the cache, with a CRC that matches (only the arrays are wrong)."""
    path.write_bytes(cache.framed(payload))


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


def test_a_loaded_index_outlives_its_file_being_replaced_or_removed(built: Built) -> None:
    index, path, keys = built
    loaded = RecallIndex()
    assert read_cache(path, loaded, keys) == set()
    expected = answers(index)
    smaller = RecallIndex()
    smaller.add_many(NOTES[:3], keys)
    write_cache(path, smaller)  # replaced while the first load still reads its arrays
    assert answers(loaded) == expected
    path.unlink()
    loaded.add("project", Note("late-1", "A late note on pricing", "Cards."), cache_key=1)
    assert [hit.id for hit in loaded.search("late pricing note", 1)] == ["late-1"]


def _resident_kb(path: Path) -> int:
    """Resident kilobytes of this process's mappings of ``path`` (Linux ``smaps``)."""
    total, mine = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and ":" not in fields[0]:
            mine = fields[-1] == str(path)
        elif mine and fields[0] == "Rss:":
            total += int(fields[1])
    return total


Larger = tuple[list[tuple[Scope, Note]], RecallIndex, Path]


@pytest.fixture(scope="module")
def larger(tmp_path_factory: pytest.TempPathFactory) -> Larger:
    """3,000 notes, their index and its cache file (read by the tests, never changed)."""
    notes = synthetic_notes(3_000, seed=5)
    built = RecallIndex()
    built.add_many(notes, keys_of(notes))
    path = tmp_path_factory.mktemp("larger") / "recall-index.bin"
    write_cache(path, built)
    return notes, built, path


def recalled(index: RecallIndex, notes: list[tuple[Scope, Note]]) -> list[list[Any]]:
    texts = [note.summary + " " + note.body[:300] for _, note in notes[::100]]
    return [[(hit.key, round(hit.score, 9)) for hit in index.recall(text)] for text in texts]


@pytest.mark.skipif(
    not Path("/proc/self/smaps").exists(),
    reason="SKIPPED: the pages a process holds of a file are read from /proc/self/smaps, which "
    "only Linux has; elsewhere this memory bound is not checked by any test",
)
def test_a_loaded_index_keeps_few_of_its_files_pages(larger: Larger) -> None:
    notes, built, path = larger
    loaded = RecallIndex()
    assert read_cache(path, loaded, keys_of(notes)) == set()
    assert recalled(loaded, notes) == recalled(built, notes)
    # A term's postings are read from the file when scored, not through the map (which
    # keeps every page it reads, and the pages around it, resident): what stays is about
    # the terms' table, a fraction of the file. So are they when a note is removed or
    # replaced (its terms are found in every posting).
    scope, note = notes[7]
    loaded.add(scope, note.with_changes(summary="An edited summary"), cache_key=(1, 2, 3))
    assert loaded.remove(notes[8][0], notes[8][1].id)
    assert _resident_kb(path) * 1024 < path.stat().st_size / 2


@pytest.mark.parametrize("stale", [1, 40])
def test_a_load_with_changed_notes_copies_no_postings(larger: Larger, stale: int) -> None:
    # Notes changed since the cache was written (their file's key differs) are left out of
    # the load and indexed again by the caller; the others' postings are still read from the
    # file, not copied into the process (a copy of the file's largest part, as a load with
    # one edited note made before).
    notes, built, path = larger
    keys = keys_of(notes)
    changed = dict(keys)
    for scope, note in notes[:stale]:
        changed[(scope, note.id)] = (1, 2, 3)
    held = {}
    for name, current in (("fresh", keys), ("stale", changed)):
        tracemalloc.start()
        loaded = RecallIndex()
        missing = read_cache(path, loaded, current)
        held[name] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    assert missing == set(list(changed)[:stale])
    assert held["stale"] < held["fresh"] + path.stat().st_size / 4
    loaded.add_many(notes[:stale], changed)
    assert recalled(loaded, notes) == recalled(built, notes)


def test_a_file_cut_short_in_use_is_an_error_that_says_what_to_do(built: Built) -> None:
    # The cache is only ever replaced whole; a file written over in place under a loaded index
    # is refused when a term's postings are read, not misread (read through a map, it killed
    # the process with SIGBUS), and so is a removal, which reads every posting.
    _, path, keys = built
    loaded = RecallIndex()
    assert read_cache(path, loaded, keys) == set()
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 3)
    with pytest.raises(StorageError, match="restart the process"):
        loaded.search(QUERIES[0], 10)
    with pytest.raises(StorageError, match="restart the process"):
        loaded.remove(*list(keys)[5])
    assert list(keys)[5] in loaded  # nothing changed


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
        lambda data: cache.framed({"magic": "oharness-recall-cache", "format": 1}),
        lambda data: data[:5000] + bytes([data[5000] ^ 1]) + data[5001:],  # one bit flipped
        lambda data: data[:-1] + bytes([data[-1] ^ 0x80]),
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
    payload = _payload(path)
    slots = payload["slots_by_term"]
    payload["slots_by_term"] = slots[4:] + slots[:4]  # each term's slots off by one posting
    _rewrite(path, payload)
    assert read_cache(path, RecallIndex(), keys) == set(keys)


def test_a_missing_file_means_everything_is_missing(tmp_path: Path) -> None:
    keys = keys_of(NOTES[:3])
    assert read_cache(tmp_path / "absent.bin", RecallIndex(), keys) == set(keys)


def test_only_notes_with_a_key_are_cached(tmp_path: Path) -> None:
    index = RecallIndex()
    index.add_many(NOTES[:5], keys_of(NOTES[:2]))
    assert write_cache(tmp_path / "c.bin", index) == 2


def test_a_cache_is_read_into_an_empty_index_only(built: Built) -> None:
    _, path, keys = built
    restored = RecallIndex()
    restored.add("user", Note("extra-note-1ab", "Kubernetes cluster lives in eu-west-1", ""))
    with pytest.raises(ValueError, match="empty index"):
        read_cache(path, restored, keys)


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


def test_a_cache_of_the_previous_format_is_rebuilt_never_misread(built: Built) -> None:
    index, path, keys = built
    terms, entries = index_entries(index)
    ids = [entry.term_ids for entry in entries]
    old = {  # the layout of format 2: notes as rows, postings by note
        "magic": "oharness-recall-cache",
        "format": 2,
        "tokenizer": index.tokenizer.signature,
        "terms": terms,
        "notes": [(e.key[0], e.key[1], e.cache_key, e.lengths) for e in entries],
        "counts": b"".join(len(part).to_bytes(4, "little") for part in ids),
    }
    path.write_bytes(marshal.dumps(old))
    restored = RecallIndex()
    assert read_cache(path, restored, keys) == set(keys)
    assert len(restored) == 0
    restored.add_many(NOTES, keys)
    write_cache(path, restored)
    again = RecallIndex()
    assert read_cache(path, again, keys) == set()
    assert answers(again) == answers(index)


@pytest.mark.parametrize("share", [0.01, 0.2, 0.5, 0.8, 0.999])
def test_a_cache_cut_anywhere_is_rebuilt(built: Built, share: float) -> None:
    _, path, keys = built
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * share)])
    restored = RecallIndex()
    assert read_cache(path, restored, keys) == set(keys)
    assert len(restored) == 0


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p.update(scopes=p["scopes"][:-1]),
        lambda p: p.update(ids=p["ids"][:-1]),
        lambda p: p.update(lengths=p["lengths"][:-12]),
        lambda p: p.update(held=p["held"][:-4] + b"\xff\xff\xff\x7f"),
        lambda p: p.update(held=p["held"][:-4]),
        lambda p: p.update(slots_by_term=p["slots_by_term"][:-4] + b"\xff\xff\xff\x7f"),
        lambda p: p.update(scopes=b"\x02" + p["scopes"][1:]),
        lambda p: p.update(terms=tuple(p["terms"])),
        lambda p: p.update(frequencies_by_term=p["frequencies_by_term"][:-2]),
        lambda p: p.pop("slots_by_term"),
        lambda p: p.pop("frequencies_by_term"),
    ],
)
def test_inconsistent_columns_are_refused(
    built: Built, change: Callable[[dict[str, object]], object]
) -> None:
    _, path, keys = built
    payload = _payload(path)
    change(payload)
    _rewrite(path, payload)
    restored = RecallIndex()
    assert read_cache(path, restored, keys) == set(keys)
    assert len(restored) == 0


_WRITER = """
import sys
sys.path.insert(0, sys.argv[2])
from recall_helpers import synthetic_notes
from oharness.recall.cache import write_cache
from oharness.recall.index import RecallIndex
notes = synthetic_notes(1500, seed=4)
index = RecallIndex()
index.add_many(notes, {(s, n.id): (1_700_000_000 + k, len(n.body), k) for k, (s, n) in
                       enumerate(notes)})
write_cache(sys.argv[1], index)
print("ready", flush=True)  # one whole file written; now kill it in the middle of another
while True:
    write_cache(sys.argv[1], index)
"""


def test_a_writer_killed_mid_write_leaves_a_cache_that_loads_or_is_rebuilt(
    built: Built,
) -> None:
    import signal
    import subprocess
    import sys
    import time

    index, path, keys = built
    helpers = Path(__file__).parent
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(helpers)], stdout=subprocess.PIPE
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == b"ready"
        time.sleep(0.15)  # killed at whatever point of its next writes it has reached
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    bigger = synthetic_notes(1500, seed=4)
    all_keys = {(s, n.id): (1_700_000_000 + k, len(n.body), k) for k, (s, n) in enumerate(bigger)}
    restored = RecallIndex()
    missing = read_cache(path, restored, all_keys)
    assert missing == set()  # the writer's last whole file, never a part of one
    for key in missing:
        scope, note = key[0], next(n for s, n in bigger if (s, n.id) == key)
        restored.add(scope, note, cache_key=all_keys[key])
    fresh = RecallIndex()
    fresh.add_many(bigger, all_keys)
    assert answers(restored) == answers(fresh)
    del index, keys


def test_a_write_removes_the_temp_files_killed_writers_left_and_no_fresh_one(
    built: Built,
) -> None:
    import os
    import time

    index, path, _ = built
    dead = path.with_name(f".{path.name}.0123456789ab.tmp")
    fresh = path.with_name(f".{path.name}.ba9876543210.tmp")
    other = path.with_name(".another-file.0123456789ab.tmp")
    for temp in (dead, fresh, other):
        temp.write_bytes(b"half a cache")
    an_hour_ago = time.time() - 3600
    for temp in (dead, other):
        os.utime(temp, (an_hour_ago, an_hour_ago))
    write_cache(path, index)
    assert not dead.exists()  # a dead write of this cache
    assert fresh.exists()  # may be another process's write in progress
    assert other.exists()  # not this cache's


class _Killed(BaseException):
    """A writer killed between writing its temp file and renaming it (as by kill -9)."""


def test_writers_killed_every_time_leave_only_their_recent_temp_files(built: Built) -> None:
    """A process killed mid-write each time (a hook's timeout shorter than a first build)
    never completes a write; each attempt still removes the dead writes older than the stale
    age, so the folder holds only the last few minutes' worth, not one cache per attempt."""
    import os
    import time

    from oharness import fsio

    index, path, _ = built
    path.unlink(missing_ok=True)

    def killed(stage: str, target: Path) -> None:
        if stage == "before-replace" and target == path:
            raise _Killed

    def temps() -> set[Path]:
        return set(path.parent.glob(f".{path.name}.*.tmp"))

    previous = fsio.set_fault_hook(killed)
    try:
        for _ in range(3):
            with pytest.raises(_Killed):
                write_cache(path, index)
        left = temps()
        assert len(left) == 3  # each attempt's temp file (too young to be known dead)
        an_hour_ago = time.time() - 3600
        for temp in left:
            os.utime(temp, (an_hour_ago, an_hour_ago))
        with pytest.raises(_Killed):
            write_cache(path, index)
        assert len(temps()) == 1  # only this attempt's: the dead ones are gone
        assert not temps() & left
    finally:
        fsio.set_fault_hook(previous)
    assert not path.exists()  # no write ever completed
