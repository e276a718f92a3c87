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
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from oharness.daemon.events import Event
from oharness.daemon.folders import Signature, folder_signature
from oharness.daemon.state import DaemonState
from oharness.types import Scope

#: The watcher's event type.
NOTES_CHANGED = "notes_changed"


class NoteWatcher:
    """The page's watcher: :meth:`folders` and :meth:`observe` each tick of the folder watch."""

    def __init__(self, state: DaemonState, interval: float) -> None:
        self._state = state
        self.interval = interval
        self._signatures: dict[Path, Signature] = {}
        self._hosted: dict[Path, tuple[Scope, str | None]] = {}

    def folders(self) -> list[Path]:
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
        return self.observe({folder: folder_signature(folder) for folder in self.folders()})

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
