"""One look at the hosted notes folders per tick, shared by everything that watches them.

Two parts of the daemon watch the same folders for notes written by other processes (the CLI,
``oharness chat``, an editor): background sync (:mod:`oharness.daemon.background.sync`), to
upload them, and the Memory page's note watcher (:mod:`oharness.daemon.background.note_watch`),
to show them. A
:class:`FolderWatch` runs one thread for both: each tick it asks every watcher that is due
which folders it wants, walks each folder once (one listing, an ``lstat`` per note file) and
hands every such watcher the signatures of its folders. Each watcher keeps its own interval
(a tick comes as often as the most frequent one needs) and its own idea of what changed.

With :class:`~oharness.daemon.background.notices.FolderNotices` (the daemon's default) a folder
is walked only when the OS notified a change in it since its last walk (or its rescan is due);
otherwise the tick hands on the signature of its last walk, which is then still the folder's.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from oharness.daemon.background.notices import NOTIFICATIONS, FolderNotices

log = logging.getLogger(__name__)
#: A folder's note files: (name, size, mtime in ns), sorted.
Signature = tuple[tuple[str, int, int], ...]
#: A folder no watcher asked for this long is no longer watched.
_UNWANTED_SECONDS = 120.0


def folder_signature(directory: Path) -> Signature:
    """Names, sizes and mtimes of a folder's note files (cheap enough once a second).

    One listing, then an ``lstat`` per note file relative to the open folder (about 40% less
    CPU than a ``scandir`` entry's ``stat`` at 5,000 files); a file gone in between is left out.
    """
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".md"))
    except OSError:
        return ()
    if os.stat not in os.supports_dir_fd:  # e.g. Windows: by path
        return _signature(names, lambda name: os.lstat(directory / name))
    try:
        folder = os.open(directory, os.O_RDONLY)
    except OSError:
        return ()
    try:
        return _signature(names, lambda name: os.stat(name, dir_fd=folder, follow_symlinks=False))
    finally:
        os.close(folder)


def _signature(names: list[str], stat: Callable[[str], os.stat_result]) -> Signature:
    found = []
    for name in names:
        try:
            st = stat(name)
        except OSError:
            continue
        found.append((name, st.st_size, st.st_mtime_ns))
    return tuple(found)


class FolderWatcher(Protocol):
    """Something that looks at folders every ``interval`` seconds."""

    @property
    def interval(self) -> float: ...

    def folders(self) -> Iterable[Path]:
        """The folders to look at this tick (a watcher may do its own checks first)."""
        ...

    def observe(self, signatures: Mapping[Path, Signature]) -> object:
        """The signatures of the folders it asked for, walked this tick."""
        ...


class FolderWatch:
    """The daemon's one folder-watching thread; :meth:`tick` is the whole of its work."""

    def __init__(
        self,
        *,
        signature: Callable[[Path], Signature] = folder_signature,
        monotonic: Callable[[], float] = time.monotonic,
        notices: FolderNotices | None = None,
    ) -> None:
        self._signature = signature
        self._monotonic = monotonic
        #: None: every folder walked every tick.
        self.notices = notices
        self._last: dict[Path, Signature] = {}
        self._wanted_at: dict[Path, float] = {}
        self._watchers: list[FolderWatcher] = []
        self._looked: dict[int, float] = {}
        self._lock = threading.Lock()
        #: Held by a tick and by :meth:`look_now`: a look never hands on what another replaced.
        self._looking = threading.RLock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, watcher: FolderWatcher) -> None:
        """Watch for ``watcher`` too (due at the next tick)."""
        with self._lock:
            self._watchers.append(watcher)

    def _due(self, now: float) -> list[FolderWatcher]:
        with self._lock:
            watchers = list(self._watchers)
        due = []
        for watcher in watchers:
            looked = self._looked.get(id(watcher))
            # Half a tick of slack: a tick that comes a hair early does not skip a whole one.
            if looked is None or now - looked + self._period() / 2 >= watcher.interval:
                due.append(watcher)
        return due

    def _period(self) -> float:
        with self._lock:
            intervals = [watcher.interval for watcher in self._watchers]
        return min(intervals, default=1.0)

    def tick(self) -> dict[Path, Signature]:
        """One look: each folder a due watcher wants walked once; returns what was walked."""
        with self._looking:
            return self._tick()

    def look_now(self, watcher: FolderWatcher) -> None:
        """A look for ``watcher`` alone, its folders walked now whatever the notices say (a
        page about to render); what later ticks hand on starts from this walk."""
        with self._looking:
            folders = list(watcher.folders())
            watcher.observe({folder: self.signature_now(folder) for folder in folders})

    def signature_now(self, folder: Path) -> Signature:
        """The folder walked now (its notice cleared first); later ticks hand this on."""
        if self.notices is None:
            return self._signature(folder)
        with self._looking:
            self.notices.must_walk(folder)
            self._wanted_at[folder] = self._monotonic()
            signature = self._last[folder] = self._signature(folder)
            return signature

    def _tick(self) -> dict[Path, Signature]:
        now = self._monotonic()
        wanted: list[tuple[FolderWatcher, list[Path]]] = []
        for watcher in self._due(now):
            self._looked[id(watcher)] = now
            try:
                wanted.append((watcher, list(watcher.folders())))
            except Exception:  # one watcher's bad look never stops the others
                log.exception("folder watch failed")
        walked: dict[Path, Signature] = {}
        for _watcher, folders in wanted:
            for folder in folders:
                if folder not in walked:
                    walked[folder] = self._look(folder, now)
        for watcher, folders in wanted:
            try:
                watcher.observe({folder: walked[folder] for folder in folders})
            except Exception:
                log.exception("folder watch failed")
        self._forget_unwanted(now)
        return walked

    def _look(self, folder: Path, now: float) -> Signature:
        """The folder's signature: walked now, or its last walk's when nothing changed since."""
        notices = self.notices
        if notices is None:
            return self._signature(folder)
        self._wanted_at[folder] = now
        if notices.must_walk(folder) or folder not in self._last:
            self._last[folder] = self._signature(folder)
        return self._last[folder]

    def _forget_unwanted(self, now: float) -> None:
        """Stop watching the folders nobody asked for a while (a workspace removed)."""
        if self.notices is None:
            return
        stale = [folder for folder, at in self._wanted_at.items() if now - at > _UNWANTED_SECONDS]
        if stale:
            for folder in stale:
                del self._wanted_at[folder]
                self._last.pop(folder, None)
            self.notices.retain(self._wanted_at)

    def describe(self) -> str:
        """How the folders are watched, in one line (``oharness serve`` prints it)."""
        if self.notices is None:
            return "notes folders: walked at every look (file notifications off)"
        modes = self.notices.modes()
        notified = sum(1 for mode in modes.values() if mode == NOTIFICATIONS)
        parts = [f"{notified} watched with file notifications"] if notified else []
        parts += [f"{folder} {mode}" for folder, mode in modes.items() if mode != NOTIFICATIONS]
        return "notes folders: " + ("; ".join(parts) or "none watched")

    def start(self) -> None:
        """The first look now (every watcher's baseline), then the thread."""
        if self._thread is not None or not self._watchers:
            return
        self.tick()
        self._thread = threading.Thread(target=self._run, name="oharness-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=5.0)
        if self.notices is not None:
            self.notices.close()

    def _run(self) -> None:
        while not self._stopping.wait(self._period()):
            try:
                self.tick()
            except Exception:  # the watch must outlive one bad look
                log.exception("folder watch failed")
