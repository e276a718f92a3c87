"""Notes changed on disk by another process appear on the page (spec 11: live updates).

The daemon knows its own writes (tasks, the page, sync pulls publish ``memory_changed``), but
not a ``remember`` from the CLI, another agent or an editor. The watcher looks at every hosted
folder's listing (names, sizes, mtimes) every ``interval`` seconds — walked on the daemon's one
folder-watching thread (:class:`~oharness.daemon.background.folder_watch.FolderWatch`), once a
tick for it and background sync together — and, while anyone listens on
``/events``, publishes ``notes_changed`` ``{"scope", "source": "files"}`` for a folder that
changed: for the project scope with its workspace, for the user scope (shared by every
workspace) with none, so every page hears it. Its own event type, not ``memory_changed``: the
daemon's own writes change the folders too, and a client of the task API must see exactly one
``memory_changed`` per task that changed memory (spec 10.1).

A page between its render and its ``/events`` connection: every change the watcher sees bumps
its :attr:`~NoteWatcher.version` (listened to or not). A full page render first looks at the
folders itself (:meth:`~NoteWatcher.look_now`, before the page reads any note) and carries the
version in its ``/events?since=`` link; the stream then starts with a ``notes_changed`` for
each folder that changed after that version (:meth:`~NoteWatcher.subscribe`). So a change made
between the render and the connection is announced, and one the render already shows is not
(the look before the render took it in silently).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from oharness.daemon.background.folder_watch import FolderWatch, Signature, folder_signature
from oharness.daemon.events import Event, EventBus, Subscription
from oharness.daemon.workspaces import WorkspaceRegistry
from oharness.notes.store import NoteStore
from oharness.types import Scope

#: The watcher's event type.
NOTES_CHANGED = "notes_changed"


class WatchedDaemon(Protocol):
    """What the watcher uses of the daemon's state (a :class:`~oharness.daemon.state.DaemonState`,
    which builds the watcher and so cannot be imported here)."""

    @property
    def registry(self) -> WorkspaceRegistry: ...

    @property
    def folders(self) -> FolderWatch: ...

    @property
    def bus(self) -> EventBus: ...


class NoteWatcher:
    """The page's watcher: :meth:`folders` and :meth:`observe` each tick of the folder watch."""

    def __init__(self, state: WatchedDaemon, interval: float) -> None:
        self._state = state
        self.interval = interval
        self._signatures: dict[Path, Signature] = {}
        self._hosted: dict[Path, tuple[Scope, str | None]] = {}
        #: Each hosted folder's stores (the user folder has one per workspace).
        self._stores: dict[Path, list[NoteStore]] = {}
        #: Bumped by every change seen; :attr:`_changed_at` holds each folder's last bump.
        self.version = 0
        self._changed_at: dict[Path, int] = {}
        self._lock = threading.RLock()

    def folders(self) -> list[Path]:
        """Every hosted folder: each workspace's project notes and the user notes."""
        folders: dict[Path, tuple[Scope, str | None]] = {}
        stores: dict[Path, list[NoteStore]] = {}
        for hosted in self._state.registry.all():
            service = hosted.workspace.service
            for scope in service.available_scopes():
                workspace = hosted.project_id if scope == "project" else None
                store = service.store(scope)
                folders[store.directory] = (scope, workspace)
                stores.setdefault(store.directory, []).append(store)
        self._hosted, self._stores = folders, stores
        return list(folders)

    def look_once(self) -> list[Event]:
        """One look of its own (folders walked here): what :meth:`observe` published."""
        with self._lock:
            return self.observe({folder: folder_signature(folder) for folder in self.folders()})

    def look_now(self) -> int:
        """A look at every folder walked now, through the daemon's folder watch so its later
        ticks start from the same walk (before a page render reads notes); the version."""
        # Not under this watcher's lock: a tick holds the folder watch's, then takes this one.
        self._state.folders.look_now(self)
        return self.version

    def observe(self, signatures: Mapping[Path, Signature]) -> list[Event]:
        """Compare every folder with the last look; publish (and return) what changed."""
        with self._lock:
            published = []
            listening = self._state.bus.subscribers > 0
            for directory, (scope, workspace) in self._hosted.items():
                signature = signatures.get(directory)
                if signature is None:
                    continue
                before = self._signatures.get(directory)
                self._signatures[directory] = signature
                if before is None or before == signature:
                    continue
                for store in self._stores.get(directory, ()):  # a file rewritten in place
                    store.mark_stale()  # shows at the next read, not at a later spot check
                self.version += 1
                self._changed_at[directory] = self.version
                if listening:
                    event = _changed(scope, workspace)
                    self._state.bus.publish(event)
                    published.append(event)
            for gone in set(self._signatures) - set(self._hosted):
                del self._signatures[gone]
                self._changed_at.pop(gone, None)
            return published

    def subscribe(self, workspace: str | None, since: int | None) -> Subscription:
        """A subscription to the bus that starts with a ``notes_changed`` for every folder
        that changed after version ``since`` (a page rendered at that version)."""
        bus = self._state.bus
        with self._lock:  # no look between the subscription and what it is told first
            subscription = bus.subscribe(workspace)
            if since is not None:
                for directory, changed_at in self._changed_at.items():
                    hosted = self._hosted.get(directory)
                    if changed_at > since and hosted is not None:
                        bus.offer(subscription, _changed(*hosted))
            return subscription


def _changed(scope: Scope, workspace: str | None) -> Event:
    return Event(NOTES_CHANGED, {"scope": scope, "source": "files"}, workspace)
