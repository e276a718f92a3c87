"""Per-machine recall counts (spec 03.2): ``$OHARNESS_HOME/memory-usage/<sha256(key)>.json``.

Kept outside the notes so recall never changes a note (and never triggers a sync upload), and
never synced. Shape: ``{"scopeKey": "...", "notes": {"<id>": {"count": n, "lastRecalledAt": ms,
"days": {"<UTC day number>": n}}}}`` — ``days`` keeps the last :data:`HISTORY_DAYS` days of
recalls (the Memory page's "recall use over time"); files without it still load.
Feeds a tie-breaker-sized ranking boost (:func:`oharness.recall.score.usage_boost`) and the
review's "unused" finding.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oharness.errors import StorageError
from oharness.fsio import PRIVATE_FILE_MODE, atomic_write, make_directory
from oharness.project.paths import scope_key_digest
from oharness.types import Clock, Scope

if TYPE_CHECKING:
    from oharness.recall.score import Usage

FileStamp = tuple[int, int, int]
Entries = dict[str, dict[str, Any]]
#: How many days of per-day recall counts a note keeps.
HISTORY_DAYS = 90
_DAY_MS = 86_400_000


def _days(entry: Mapping[str, object]) -> dict[str, int]:
    days = entry.get("days")
    if not isinstance(days, dict):
        return {}
    try:
        return {str(int(day)): int(count) for day, count in days.items()}
    except (TypeError, ValueError):  # a hand-edited file: the history is dropped, not the counts
        return {}


class UsageLog:
    """Reads and records how often notes were recalled on this machine."""

    def __init__(self, directory: Path, *, clock: Clock) -> None:
        self.directory = directory
        self._clock = clock
        # Read on every recalled message: parse a file again only when it changed, and not
        # after this log's own writes (it keeps what it wrote).
        self._cache: dict[Path, tuple[FileStamp, Entries]] = {}
        # What a write of this log in flight puts in a file (until it is in _cache).
        self._writing: dict[Path, Entries] = {}
        self._paths: dict[str, Path] = {}
        # And make the mapping again only when one of its files changed.
        self._loaded: tuple[object, Mapping[tuple[Scope, str], Usage]] | None = None

    def _path(self, scope_key: str) -> Path:
        found = self._paths.get(scope_key)
        if found is None:  # asked twice per recalled message: hashed and joined once
            found = self._paths[scope_key] = self.directory / f"{scope_key_digest(scope_key)}.json"
        return found

    def _stamp(self, scope_key: str) -> FileStamp | None:
        try:
            st = os.stat(self._path(scope_key))
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)  # every write is a new file (inode)

    def _read(self, scope_key: str, stamp: FileStamp | None) -> Entries:
        if stamp is None:
            return {}
        path = self._path(scope_key)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        writing = self._writing.get(path)
        if writing is not None:  # this log writes the file now (another thread): its copy
            return writing
        notes = self._parse(path)
        self._cache[path] = (stamp, notes)
        return notes

    @staticmethod
    def _parse(path: Path) -> Entries:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        notes = data.get("notes") if isinstance(data, dict) else None
        if not isinstance(notes, dict):
            return {}
        return {
            note_id: entry
            for note_id, entry in notes.items()
            if isinstance(entry, dict)
            and isinstance(entry.get("count"), int)
            and isinstance(entry.get("lastRecalledAt"), int)
        }

    def load(self, scope_keys: Mapping[Scope, str]) -> Mapping[tuple[Scope, str], Usage]:
        """Usage of every note of these scopes that was ever recalled here (read-only).

        A view over the files as parsed: a recall looks up a few notes, so entries become
        :class:`~oharness.recall.score.Usage` values only when asked for.
        """
        stamps = tuple((scope, key, self._stamp(key)) for scope, key in scope_keys.items())
        if self._loaded is not None and self._loaded[0] == stamps:
            return self._loaded[1]
        loaded = _UsageView({scope: self._read(key, stamp) for scope, key, stamp in stamps})
        self._loaded = (stamps, loaded)
        return loaded

    def history(self, scope_keys: Mapping[Scope, str]) -> dict[tuple[Scope, str], dict[int, int]]:
        """Per-day recall counts (UTC day number → recalls) of every note recalled here."""
        found: dict[tuple[Scope, str], dict[int, int]] = {}
        for scope, key in scope_keys.items():
            for note_id, entry in self._read(key, self._stamp(key)).items():
                days = _days(entry)
                if days:
                    found[(scope, note_id)] = {int(day): n for day, n in days.items()}
        return found

    def record(self, scope_key: str, note_ids: Iterable[str]) -> None:
        """Count one recall of each note (read-modify-write under a file lock)."""
        import filelock  # only a recall that attached something writes: a hook's usual prompt

        ids = list(note_ids)
        if not ids:
            return
        path = self._path(scope_key)
        try:
            make_directory(self.directory)
            with filelock.FileLock(str(path) + ".lock", timeout=10, mode=PRIVATE_FILE_MODE):
                # Under the lock the file is as its stamp says: this log's own copy when it
                # wrote it last, else parsed again (another process wrote it).
                stamp = self._stamp(scope_key)
                cached = self._cache.get(path)
                fresh = cached is not None and stamp is not None and cached[0] == stamp
                notes = dict(cached[1]) if cached is not None and fresh else self._parse(path)
                now = self._clock()
                today = now // _DAY_MS
                for note_id in ids:
                    entry = notes.get(note_id, {"count": 0, "lastRecalledAt": 0})
                    days = {
                        day: n for day, n in _days(entry).items() if today - int(day) < HISTORY_DAYS
                    }
                    days[str(today)] = days.get(str(today), 0) + 1
                    notes[note_id] = {
                        "count": entry["count"] + 1,
                        "lastRecalledAt": now,
                        "days": days,
                    }
                payload = {"scopeKey": scope_key, "notes": notes}
                self._writing[path] = notes
                try:
                    atomic_write(path, _encode(payload))
                    written = self._stamp(scope_key)
                    if written is not None:  # the next load reads this copy, not the file
                        self._cache[path] = (written, notes)
                finally:
                    self._writing.pop(path, None)
        except (OSError, filelock.Timeout) as exc:
            raise StorageError(f"could not record recall usage in {path}: {exc}") from exc


def _encode(payload: object) -> bytes:
    """JSON as UTF-8 (msgspec: the file grows with every note recalled, and a daemon writes it
    after every recall that attached something)."""
    import msgspec

    return msgspec.json.encode(payload)


class _UsageView(Mapping[tuple[Scope, str], "Usage"]):
    """:meth:`UsageLog.load`'s answer: the parsed entries of each scope, read on demand."""

    def __init__(self, scopes: dict[Scope, Entries]) -> None:
        self._scopes = scopes

    def __getitem__(self, key: tuple[Scope, str]) -> Usage:
        from oharness.recall.score import Usage

        entry = self._scopes.get(key[0], {}).get(key[1])
        if entry is None:
            raise KeyError(key)
        return Usage(entry["count"], entry["lastRecalledAt"])

    def __iter__(self) -> Iterator[tuple[Scope, str]]:
        for scope, entries in self._scopes.items():
            for note_id in entries:
                yield (scope, note_id)

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._scopes.values())
