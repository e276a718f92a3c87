"""Which hosted folders changed since their last walk, from the OS's file notifications.

The daemon's folder watch (:mod:`oharness.daemon.background.folder_watch`) compares each hosted
folder's listing once a second; walking a folder of 5,000 notes costs about 12 ms of CPU, and a walk
that lands during a recall request adds its time to that request. :class:`FolderNotices`
keeps one OS watch per folder (inotify on Linux, FSEvents on macOS, ReadDirectoryChangesW on
Windows, through ``watchfiles``) and tells the folder watch to walk a folder only when the OS
said something in it changed — a note written, rewritten in place, renamed over or deleted,
by any process — or when its rescan is due (every :data:`RESCAN_SECONDS`, in case the OS lost
an event). An idle daemon then walks each folder once a minute instead of once a second.

A folder is polled (walked every tick, as without notifications) when notifications cannot be
trusted there: ``watchfiles`` is not installed, the folder is on a network or FUSE file system
(a change made on another machine raises no local event), the folder does not exist yet (it is
watched once it does), the OS refused the watch (e.g. the inotify limits), or its watch
failed. :meth:`FolderNotices.modes` says which is used for each folder (``oharness serve``
prints it).

The notice is cleared *before* the folder is walked, so a change during the walk leaves the
folder to walk again at the next tick: no change is missed between a walk and its notice.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

log = logging.getLogger(__name__)

#: Walk a notified folder at least this often all the same (an event the OS dropped).
RESCAN_SECONDS: Final = 60.0
#: How long the notification thread waits for more changes before it passes them on (ms).
STEP_MS: Final = 200
#: Mounts where a change made elsewhere raises no local notification (polled instead).
REMOTE_FILE_SYSTEMS: Final = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "9p", "ceph", "glusterfs",
        "lustre", "gpfs", "davfs", "virtiofs", "vboxsf", "prl_fs", "vmhgfs", "fuseblk",
    }
)  # fmt: skip
NOTIFICATIONS: Final = "notifications"
_MOUNTINFO: Final = Path("/proc/self/mountinfo")


def remote_file_system(directory: Path, mountinfo: Path = _MOUNTINFO) -> str | None:
    """The type of the file system holding ``directory`` when notifications may miss changes
    on it (network and FUSE file systems), else None (also when it cannot be told)."""
    try:
        lines = mountinfo.read_text(encoding="utf-8", errors="replace").splitlines()
        target = os.path.realpath(directory)
    except OSError:
        return None
    best, kind = "", ""
    for line in lines:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        mount = fields[4].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, line.split(" - ", 1)[1].split()[0]
    if kind in REMOTE_FILE_SYSTEMS or kind.startswith("fuse."):
        return kind
    return None


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


Watcher = Callable[[Path], Any]


def _rust_watcher(folder: Path) -> Any:
    """An OS watch of one folder (not recursive), installed before this returns."""
    from watchfiles._rust_notify import RustNotify

    return RustNotify([str(folder)], False, False, 0, False, False)


def notifications_available() -> str | None:
    """None when ``watchfiles`` can be used, else why not."""
    try:
        import watchfiles._rust_notify  # noqa: F401
    except ImportError:
        return "watchfiles is not installed (pip install 'oharness[server]')"
    return None


@dataclass
class _Folder:
    """One folder's watch (``notify`` None: polled, for ``reason``)."""

    identity: tuple[int, int] | None
    reason: str = ""
    notify: Any = None
    thread: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    changed: bool = True
    failed: str = ""
    walked_at: float = 0.0


class FolderNotices:
    """One OS watch per folder; :meth:`must_walk` says whether a folder needs a walk now."""

    def __init__(
        self,
        *,
        rescan_seconds: float = RESCAN_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        watcher: Watcher | None = None,
        remote: Callable[[Path], str | None] = remote_file_system,
        on_notice: Callable[[Path], None] | None = None,
    ) -> None:
        self.rescan_seconds = rescan_seconds
        self._monotonic = monotonic
        self._unavailable = None if watcher is not None else notifications_available()
        self._watcher = watcher or _rust_watcher
        self._remote = remote
        #: Called (on a notification thread) each time the OS reports changes in a folder.
        self.on_notice = on_notice
        self._folders: dict[Path, _Folder] = {}
        self._lock = threading.Lock()

    def must_walk(self, folder: Path) -> bool:
        """True when ``folder`` must be walked now (its notice is cleared: a change from here
        on asks for another walk)."""
        with self._lock:
            entry = self._folders.get(folder)
            identity = _identity(folder)
            if entry is None or entry.identity != identity or entry.failed:
                # New, (re)created, moved or its watch failed: watch it afresh, walk it now.
                self._stop(entry)
                entry = self._folders[folder] = self._watch(folder, identity)
            if entry.notify is None:
                return True
            now = self._monotonic()
            if entry.changed or now - entry.walked_at >= self.rescan_seconds:
                entry.changed = False
                entry.walked_at = now
                return True
            return False

    def retain(self, folders: Iterable[Path]) -> None:
        """Stop watching every folder not in ``folders``."""
        keep = set(folders)
        with self._lock:
            for folder in [folder for folder in self._folders if folder not in keep]:
                self._stop(self._folders.pop(folder))

    def modes(self) -> dict[Path, str]:
        """How each folder is watched: ``notifications`` or ``polling (<why>)``."""
        with self._lock:
            return {
                folder: NOTIFICATIONS if entry.notify is not None else f"polling ({entry.reason})"
                for folder, entry in self._folders.items()
            }

    def close(self) -> None:
        """Stop every watch."""
        with self._lock:
            entries, self._folders = list(self._folders.values()), {}
        for entry in entries:
            self._stop(entry)

    def _watch(self, folder: Path, identity: tuple[int, int] | None) -> _Folder:
        if self._unavailable is not None:
            return _Folder(identity, self._unavailable)
        if identity is None:
            return _Folder(identity, "the folder does not exist yet")
        remote = self._remote(folder)
        if remote is not None:
            return _Folder(identity, f"a {remote} file system")
        try:
            notify = self._watcher(folder)
        except Exception as exc:  # e.g. the inotify limits reached: polling still sees it
            log.warning("notes folder %s polled: no file notifications (%s)", folder, exc)
            return _Folder(identity, f"notifications refused: {exc}")
        entry = _Folder(identity, notify=notify)
        entry.thread = threading.Thread(
            target=self._listen, args=(folder, entry), name="oharness-notices", daemon=True
        )
        entry.thread.start()
        return entry

    def _listen(self, folder: Path, entry: _Folder) -> None:
        try:
            while True:
                result = entry.notify.watch(STEP_MS, STEP_MS, 0, entry.stop)
                if result == "stop":
                    return
                if isinstance(result, set):
                    entry.changed = True
                    if self.on_notice is not None:
                        self.on_notice(folder)
        except Exception as exc:  # the next look watches afresh (and walks meanwhile)
            log.warning("file notifications failed: %s", exc)
            entry.failed = str(exc) or type(exc).__name__

    @staticmethod
    def _stop(entry: _Folder | None) -> None:
        if entry is None or entry.notify is None:
            return
        entry.stop.set()
        if entry.thread is not None and entry.thread is not threading.current_thread():
            entry.thread.join(timeout=2.0)
        with contextlib.suppress(Exception):
            entry.notify.close()
