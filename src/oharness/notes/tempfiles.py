"""Temp files that killed writers left in a notes folder (01.7).

:func:`oharness.fsio.atomic_write` writes to ``.<name>.<12 hex>.tmp`` beside its target and
renames it into place; a writer killed between the two leaves the temp file behind. A temp file
younger than :data:`STALE_TEMP_AGE_MS` may be a write in progress in another process and is
never touched; an older one of our own pattern is removed by the note store whenever it takes
the folder's write lock (and so by every sync pass, which writes under it). Other hidden
``.tmp`` files are never loaded and never removed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Final

#: A temp file older than this is a dead write, not one in progress (10 minutes).
STALE_TEMP_AGE_MS: Final = 10 * 60 * 1000

_OWN_TEMP = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


def is_own_temp_name(name: str) -> bool:
    """True for exactly the names :func:`oharness.fsio.temp_path_for` produces."""
    return _OWN_TEMP.fullmatch(name) is not None


def temp_age_ms(path: Path, now_ms: int) -> int | None:
    """How long ago ``path`` was last written (``None`` when it is gone)."""
    try:
        return now_ms - path.stat().st_mtime_ns // 1_000_000
    except OSError:
        return None


def is_stale_temp(path: Path, now_ms: int, min_age_ms: int = STALE_TEMP_AGE_MS) -> bool:
    """An own temp file old enough to be a dead write."""
    age = temp_age_ms(path, now_ms)
    return is_own_temp_name(path.name) and age is not None and age >= min_age_ms


def remove_stale_temp_files(
    paths: Iterable[Path], now_ms: int, min_age_ms: int = STALE_TEMP_AGE_MS
) -> list[Path]:
    """Delete the stale own temp files among ``paths``; returns the ones removed."""
    removed = []
    for path in paths:
        if not is_stale_temp(path, now_ms, min_age_ms):
            continue
        try:
            path.unlink()
        except FileNotFoundError:  # another writer removed it first
            continue
        except OSError:  # unremovable (permissions): doctor keeps reporting it
            continue
        removed.append(path)
    return removed


def remove_dead_writes(path: Path) -> None:
    """Delete what killed writers of ``path`` left: its own temp files, old enough to be dead
    (call it before writing, so a writer killed every time still clears earlier attempts)."""
    from glob import escape

    try:
        left = list(path.parent.glob(f".{escape(path.name)}.*.tmp"))
    except OSError:  # the folder cannot be listed: the next write tries again
        return
    remove_stale_temp_files(left, time.time_ns() // 1_000_000)
