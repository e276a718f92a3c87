"""The demo's temporary home: one folder holding both devices, the cloud storage and a lock.

``<tmp>/oharness-demo-XXXXXXXX/`` holds ``this-device/`` and ``other-device/`` (each a home
and a copy of the sample project), ``cloud/`` (the sync server's file storage) and
``demo.json`` (the running demo's pid, URLs and paths). ``demo.lock`` is held (an OS file
lock) for as long as the demo runs, so a demo killed with ``kill -9`` leaves a folder whose
lock nobody holds: the next ``oharness demo`` removes it before it starts. A folder is only
ever removed when it carries the marker ``demo.json``, is owned by this user and its lock is
free, so a demo still starting (lock taken before the marker is written) or still running is
never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import filelock

from oharness.errors import StorageError
from oharness.fsio import atomic_write

PREFIX: Final = "oharness-demo-"
MARKER: Final = "demo.json"
LOCK: Final = "demo.lock"
PROJECT_NAME: Final = "tidewater-shop"


@dataclass(frozen=True)
class Device:
    """One simulated machine: its ``OHARNESS_HOME`` and its copy of the sample project."""

    name: str
    home: Path
    project: Path


class DemoHome:
    """A fresh temporary folder for one demo, locked while it runs."""

    def __init__(self, root: Path, lock: filelock.BaseFileLock) -> None:
        self.root = root
        self._lock = lock
        self.this_device = _device(root, "this-device")
        self.other_device = _device(root, "other-device")
        self.cloud = root / "cloud"

    @classmethod
    def create(cls, parent: Path | None = None) -> DemoHome:
        """Make the folder, take its lock, then write the marker (in that order)."""
        try:
            root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent)).resolve()
        except OSError as exc:
            raise StorageError(
                f"cannot create the demo's temporary folder: {exc.strerror or exc}; set TMPDIR "
                "to a writable folder",
                path=str(parent or tempfile.gettempdir()),
            ) from exc
        lock = filelock.FileLock(str(root / LOCK))
        try:
            lock.acquire(timeout=0)
            home = cls(root, lock)
            for device in (home.this_device, home.other_device):
                device.home.mkdir(parents=True)
                device.project.mkdir(parents=True)
            home.cloud.mkdir()
            home.write_status({"pid": os.getpid(), "state": "starting"})
        except BaseException:  # interrupted or refused before the marker: leave nothing
            shutil.rmtree(root, ignore_errors=True)
            lock.release()
            raise
        return home

    def write_status(self, data: dict[str, Any]) -> None:
        """Replace ``demo.json`` (what the demo runs, for scripts and the next start)."""
        text = json.dumps({"root": str(self.root), **data}, indent=2) + "\n"
        atomic_write(self.root / MARKER, text.encode("utf-8"), mode=0o600)

    def remove(self) -> None:
        """Delete the whole folder and let go of the lock."""
        for _ in range(3):  # a file written while the tree is removed fails one round
            with contextlib.suppress(OSError):
                shutil.rmtree(self.root)
            if not self.root.exists():
                break
        self._lock.release()


def _device(root: Path, name: str) -> Device:
    return Device(name, root / name / "home", root / name / PROJECT_NAME)


def remove_stale(parent: Path | None = None) -> list[Path]:
    """Remove the folders of demos that are no longer running (killed ones); return them."""
    base = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        candidates = sorted(base.glob(PREFIX + "*"))
    except OSError:
        return []
    for folder in candidates:
        if _remove_if_stale(folder):
            removed.append(folder)
    return removed


def _remove_if_stale(folder: Path) -> bool:
    try:
        info = folder.lstat()
    except OSError:
        return False
    owned = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    if folder.is_symlink() or not folder.is_dir() or not owned:
        return False
    if not (folder / MARKER).is_file() or not (folder / LOCK).is_file():
        return False
    lock = filelock.FileLock(str(folder / LOCK))
    try:
        lock.acquire(timeout=0)
    except (filelock.Timeout, OSError):
        return False  # a running demo holds it
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        lock.release()
    return not folder.exists()
