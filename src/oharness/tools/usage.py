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
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from oharness.errors import StorageError
from oharness.fsio import atomic_write
from oharness.project.paths import scope_key_digest
from oharness.types import Clock, Scope

if TYPE_CHECKING:
    from oharness.recall.score import Usage

FileStamp = tuple[int, int, int]
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
        # Read on every recalled message: parse a file again only when it changed.
        self._cache: dict[Path, tuple[FileStamp, dict[str, dict[str, Any]]]] = {}
        # And build the mapping again only when one of its files changed (a daemon answers
        # many messages between two recorded recalls).
        self._loaded: tuple[object, Mapping[tuple[Scope, str], Usage]] | None = None

    def _path(self, scope_key: str) -> Path:
        return self.directory / f"{scope_key_digest(scope_key)}.json"

    def _stamp(self, scope_key: str) -> FileStamp | None:
        try:
            st = os.stat(self._path(scope_key))
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)  # every write is a new file (inode)

    def _read(self, scope_key: str, stamp: FileStamp | None) -> dict[str, dict[str, Any]]:
        if stamp is None:
            return {}
        path = self._path(scope_key)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        notes = self._parse(path)
        self._cache[path] = (stamp, notes)
        return notes

    @staticmethod
    def _parse(path: Path) -> dict[str, dict[str, Any]]:
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
        """Usage of every note of these scopes that was ever recalled here (read-only)."""
        from oharness.recall.score import Usage

        stamps = tuple((scope, key, self._stamp(key)) for scope, key in scope_keys.items())
        if self._loaded is not None and self._loaded[0] == stamps:
            return self._loaded[1]
        usage: dict[tuple[Scope, str], Usage] = {}
        for scope, key, stamp in stamps:
            for note_id, entry in self._read(key, stamp).items():
                usage[(scope, note_id)] = Usage(entry["count"], entry["lastRecalledAt"])
        loaded = MappingProxyType(usage)
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
            self.directory.mkdir(parents=True, exist_ok=True)
            with filelock.FileLock(str(path) + ".lock", timeout=10):
                notes = self._parse(path)  # exact under the lock, whatever the cache holds
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
                atomic_write(path, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        except (OSError, filelock.Timeout) as exc:
            raise StorageError(f"could not record recall usage in {path}: {exc}") from exc
