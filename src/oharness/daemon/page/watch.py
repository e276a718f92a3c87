"""Notes changed on disk by another process appear on the page (spec 11: live updates).

The daemon knows its own writes (tasks, the page, sync pulls publish ``memory_changed``), but
not a ``remember`` from the CLI, another agent or an editor. The watcher looks at every hosted
folder's listing (names, sizes, mtimes) every ``interval`` seconds and, while anyone listens on
``/events``, publishes ``notes_changed`` ``{"scope", "source": "files"}`` for a folder that
changed: for the project scope with its workspace, for the user scope (shared by every
workspace) with none, so every page hears it. Its own event type, not ``memory_changed``: the
daemon's own writes change the folders too, and a client of the task API must see exactly one
``memory_changed`` per task that changed memory (spec 10.1).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from oharness.daemon.background import Signature, folder_signature
from oharness.daemon.events import Event
from oharness.daemon.state import DaemonState
from oharness.types import Scope

log = logging.getLogger(__name__)
#: The watcher's event type.
NOTES_CHANGED = "notes_changed"


class NoteWatcher:
    """One thread per daemon; :meth:`look_once` is the whole of its work."""

    def __init__(self, state: DaemonState, interval: float) -> None:
        self._state = state
        self._interval = interval
        self._signatures: dict[Path, Signature] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="oharness-page-watch", daemon=True)

    def start(self) -> None:
        self.look_once()  # the baseline: what the first page rendered
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            try:
                self.look_once()
            except Exception:  # the watch must outlive one bad look
                log.exception("note watch failed")

    def _folders(self) -> dict[Path, tuple[Scope, str | None]]:
        folders: dict[Path, tuple[Scope, str | None]] = {}
        for hosted in self._state.registry.all():
            service = hosted.workspace.service
            for scope in service.available_scopes():
                workspace = hosted.project_id if scope == "project" else None
                folders[service.store(scope).directory] = (scope, workspace)
        return folders

    def look_once(self) -> list[Event]:
        """Compare every folder with the last look; publish (and return) what changed."""
        published = []
        listening = self._state.bus.subscribers > 0
        folders = self._folders()
        for directory, (scope, workspace) in folders.items():
            signature = folder_signature(directory)
            before = self._signatures.get(directory)
            self._signatures[directory] = signature
            if before is None or before == signature or not listening:
                continue
            event = Event(NOTES_CHANGED, {"scope": scope, "source": "files"}, workspace)
            self._state.bus.publish(event)
            published.append(event)
        for gone in set(self._signatures) - set(folders):
            del self._signatures[gone]
        return published
