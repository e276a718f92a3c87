"""Who runs background sync on this machine: one schedule per notes folder across processes.

While a daemon runs for an ``OHARNESS_HOME`` it holds ``$OHARNESS_HOME/daemon.lock`` (an OS
file lock) and schedules every notes folder of that home; ``oharness chat`` and CLI commands
started meanwhile check :func:`daemon_running` and leave background sync to it (their writes
are noticed by the daemon's folder watch). The lock is released by the OS when the daemon
dies, so a crashed daemon never blocks sync.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import filelock

from oharness.fsio import PRIVATE_FILE_MODE, make_directory

LOCK_FILE: Final = "daemon.lock"
INFO_FILE: Final = "daemon.json"


class DaemonLock:
    """The daemon's claim on a home (non-blocking)."""

    def __init__(self, home: Path) -> None:
        self.path = home / LOCK_FILE
        self._lock = filelock.FileLock(
            str(self.path), timeout=0, is_singleton=False, mode=PRIVATE_FILE_MODE
        )

    def acquire(self) -> bool:
        """True when this process now holds the lock; False when another daemon does."""
        make_directory(self.path.parent)
        try:
            self._lock.acquire(timeout=0)
        except filelock.Timeout:
            return False
        return True

    def release(self) -> None:
        self._lock.release(force=True)

    @property
    def held(self) -> bool:
        return self._lock.is_locked


def daemon_running(home: Path) -> bool:
    """True while some process holds the daemon lock of ``home``."""
    path = home / LOCK_FILE
    if not path.exists():
        return False
    probe = filelock.FileLock(str(path), timeout=0, is_singleton=False, mode=PRIVATE_FILE_MODE)
    try:
        probe.acquire(timeout=0)
    except filelock.Timeout:
        return True
    except OSError:
        return False
    probe.release(force=True)
    return False


def read_daemon_info(home: Path) -> dict[str, Any] | None:
    """The running daemon's ``daemon.json`` (url, pid, port), if readable."""
    try:
        data = json.loads((home / INFO_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
