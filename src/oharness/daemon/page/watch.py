"""Notes changed on disk by another process appear on the page (spec 11: live updates).

The daemon knows its own writes (tasks, the page, sync pulls publish ``memory_changed``), but
not a ``remember`` from the CLI, another agent or an editor. The watcher looks at every hosted
folder's listing (names, sizes, mtimes) every ``interval`` seconds — walked on the daemon's one
folder-watching thread (:class:`~oharness.daemon.folders.FolderWatch`), once a tick for it and
background sync together — and, while anyone listens on
``/events``, publishes ``notes_changed`` ``{"scope", "source": "files"}`` for a folder that
changed: for the project scope with its workspace, for the user scope (shared by every
workspace) with none, so every page hears it. Its own event type, not ``memory_changed``: the
daemon's own writes change the folders too, and a client of the task API must see exactly one
``memory_changed`` per task that changed memory (spec 10.1).

While nobody listens the watcher has no one to tell: it looks only every
:data:`IDLE_SECONDS` to keep its baseline (walking 10,000 note files costs about 25 ms of CPU,
which a daemon answering recalls for a hook would otherwise pay every second). Once a page
listens it looks every ``interval`` again, and its first look compares with that baseline, so a
change made in between is still announced (at worst one made just before the page opened).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from oharness.daemon.events import Event
from oharness.daemon.folders import Signature, folder_signature
from oharness.daemon.state import DaemonState
from oharness.types import Scope

#: The watcher's event type.
NOTES_CHANGED = "notes_changed"
#: How often the watcher looks while nobody listens (only to keep its baseline).
IDLE_SECONDS: Final = 10.0


class NoteWatcher:
    """The page's watcher: :meth:`folders` and :meth:`observe` each tick of the folder watch."""

    def __init__(
        self,
        state: DaemonState,
        interval: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._state = state
        self.interval = interval
        self._monotonic = monotonic
        self._signatures: dict[Path, Signature] = {}
        self._hosted: dict[Path, tuple[Scope, str | None]] = {}
        self._looked_at: float | None = None

    def folders(self) -> list[Path]:
        """The folders to walk this tick: every hosted one, or none while nobody listens and
        the baseline is younger than :data:`IDLE_SECONDS`."""
        now = self._monotonic()
        idle = self._state.bus.subscribers == 0
        if idle and self._looked_at is not None and now - self._looked_at < IDLE_SECONDS:
            return []
        self._looked_at = now
        return self._all_folders()

    def _all_folders(self) -> list[Path]:
        """Every hosted folder: each workspace's project notes and the user notes."""
        folders: dict[Path, tuple[Scope, str | None]] = {}
        for hosted in self._state.registry.all():
            service = hosted.workspace.service
            for scope in service.available_scopes():
                workspace = hosted.project_id if scope == "project" else None
                folders[service.store(scope).directory] = (scope, workspace)
        self._hosted = folders
        return list(folders)

    def look_once(self) -> list[Event]:
        """One look of its own (folders walked here): what :meth:`observe` published."""
        return self.observe({folder: folder_signature(folder) for folder in self._all_folders()})

    def observe(self, signatures: Mapping[Path, Signature]) -> list[Event]:
        """Compare every folder with the last look; publish (and return) what changed."""
        published = []
        listening = self._state.bus.subscribers > 0
        for directory, (scope, workspace) in self._hosted.items():
            signature = signatures.get(directory)
            if signature is None:
                continue
            before = self._signatures.get(directory)
            self._signatures[directory] = signature
            if before is None or before == signature or not listening:
                continue
            event = Event(NOTES_CHANGED, {"scope": scope, "source": "files"}, workspace)
            self._state.bus.publish(event)
            published.append(event)
        for gone in set(self._signatures) - set(self._hosted):
            del self._signatures[gone]
        return published
