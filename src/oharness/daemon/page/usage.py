"""What recall used, for the page: counts per note and recalls per day (``memory-usage/``)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from oharness.memory.usage import UsageLog
from oharness.memory.workspace import Workspace
from oharness.project.paths import scope_key_digest
from oharness.recall.score import Usage
from oharness.types import Scope

NoteKey = tuple[Scope, str]
#: How many days the recall charts cover.
DAYS: Final = 30
DAY_MS: Final = 86_400_000


_LOGS: dict[Path, UsageLog] = {}


def _log(workspace: Workspace) -> tuple[UsageLog, dict[Scope, str]]:
    service = workspace.service
    keys = {scope: service.scope_key(scope) for scope in service.available_scopes()}
    directory = workspace.home.usage_dir
    log = _LOGS.get(directory)
    if log is None:  # one per folder: it parses a file again only when the file changed
        log = _LOGS.setdefault(directory, UsageLog(directory, clock=lambda: 0))
    return log, keys


def usage_stamp(workspace: Workspace) -> tuple[tuple[int, int], ...]:
    """Size and mtime of each scope's usage file: changes whenever a recall is recorded."""
    log, keys = _log(workspace)
    stamps = []
    for key in keys.values():
        try:
            st = os.stat(log.directory / f"{scope_key_digest(key)}.json")
        except OSError:
            stamps.append((0, 0))
            continue
        stamps.append((st.st_mtime_ns, st.st_size))
    return tuple(stamps)


def usage_counts(workspace: Workspace) -> Mapping[NoteKey, Usage]:
    """How often, and when last, each note was recalled on this machine (read-only)."""
    log, keys = _log(workspace)
    return log.load(keys)


def usage_history(workspace: Workspace) -> dict[NoteKey, dict[int, int]]:
    """Recalls per UTC day number of each note (the last 90 days)."""
    log, keys = _log(workspace)
    return log.history(keys)


@dataclass(frozen=True)
class Series:
    """Recalls per day, oldest first, with what the chart needs to draw it."""

    values: tuple[int, ...]
    first_day: str
    last_day: str

    @property
    def total(self) -> int:
        return sum(self.values)

    @property
    def peak(self) -> int:
        return max(self.values, default=0)


def _day_label(day: int) -> str:
    return dt.datetime.fromtimestamp(day * 86_400, tz=dt.UTC).strftime("%Y-%m-%d")


def day_series(per_day: Mapping[int, int], today: int, days: int = DAYS) -> Series:
    """``per_day`` (UTC day number → recalls) as the last ``days`` days up to ``today``."""
    first = today - days + 1
    values = tuple(per_day.get(day, 0) for day in range(first, today + 1))
    return Series(values, _day_label(first), _day_label(today))
