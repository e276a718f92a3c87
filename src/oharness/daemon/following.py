"""The daemon hosts every project this machine used, so background sync covers them all.

Any interface that opens a project's memory marks it (:mod:`oharness.project.used`); background
sync calls :meth:`ProjectFollower.follow` every few seconds while signed in, which hosts each
marked project not hosted yet, exactly as ``POST /workspaces`` would (never creating one). Its
notes are then scheduled like the rest: uploaded within seconds of a write, checked for the
other machines' changes every 20 s.

- A mark whose folder is gone, or is no project any more, is dropped.
- A project this daemon already hosts from another folder (a second clone on this machine) is
  not hosted (the API serves one folder per project), but its notes are synced all the same:
  the clone is its own replica, with its own sync state (:mod:`oharness.sync.replicas`).
  (A linked worktree shares its main worktree's notes folder, so there is nothing more to do.)
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Protocol

from oharness.daemon.errors import ApiError
from oharness.daemon.workspaces import WorkspaceRegistry
from oharness.errors import OHarnessError
from oharness.project.paths import HomeLayout
from oharness.project.used import UsedProject, forget_used, used_projects
from oharness.tools.workspace import Workspace, open_workspace

log = logging.getLogger(__name__)
#: Refusals that mean the folder is no project any more: its mark goes.
_GONE = frozenset({"invalid_path", "not_a_project"})


class OtherFolders(Protocol):
    """Where the other clones of hosted projects are synced (the daemon's background sync)."""

    def add_folder(self, folder: str, workspace: Workspace) -> None: ...

    def drop_folder(self, folder: str) -> None: ...


class ProjectFollower:
    """Hosts the projects used on this machine (one per daemon)."""

    def __init__(self, registry: WorkspaceRegistry, home: Path) -> None:
        self._registry = registry
        self._layout = HomeLayout(home)
        #: Folders left alone, with why (said once).
        self._skipped: dict[str, str] = {}
        #: Set by the daemon: syncs a second clone of a hosted project.
        self.folders: OtherFolders | None = None
        #: The second clones synced through :attr:`folders`.
        self._others: set[str] = set()
        self._lock = threading.Lock()

    def follow(self) -> list[Path]:
        """Host every marked project not hosted yet; returns the folders newly followed."""
        with self._lock:
            hosted = {os.path.realpath(h.root) for h in self._registry.all()}
            added = []
            marked = set()
            for used in used_projects(self._layout):
                folder = os.path.realpath(used.root)
                marked.add(folder)
                if folder in hosted or folder in self._skipped or folder in self._others:
                    continue
                if self._host(used, folder):
                    added.append(used.root)
            for folder in sorted(self._others - marked):  # mark dropped: folder gone or removed
                self._drop_other(folder)
            return added

    def _drop_other(self, folder: str) -> None:
        self._others.discard(folder)
        if self.folders is not None:
            self.folders.drop_folder(folder)
            log.info("background sync no longer follows %s", folder)

    def _sync_other(self, used: UsedProject, folder: str, why: str) -> bool:
        """A second clone of a hosted project: synced, not hosted."""
        if self.folders is None:
            self._skip(folder, why)
            return False
        try:
            workspace = open_workspace(used.root, self._layout.home, register=False)
        except OHarnessError as exc:
            self._skip(folder, exc.message)
            return False
        if workspace.project is None or workspace.project.identity is None:
            workspace.close()
            forget_used(used)
            return False
        self.folders.add_folder(folder, workspace)
        self._others.add(folder)
        log.info("background sync now follows %s (another clone of a hosted project)", folder)
        return True

    def _host(self, used: UsedProject, folder: str) -> bool:
        root = used.root
        if not root.is_dir():
            forget_used(used)
            return False
        try:
            _, added = self._registry.register(root, home=self._layout.home, create=False)
        except ApiError as exc:
            if exc.code in _GONE:
                forget_used(used)
                return False
            if exc.code == "workspace_conflict":
                return self._sync_other(used, folder, exc.message)
            self._skip(folder, exc.message)
            return False
        except OHarnessError as exc:
            self._skip(folder, exc.message)
            return False
        if added:
            log.info("background sync now follows %s", root)
        return added

    def _skip(self, folder: str, reason: str) -> None:
        self._skipped[folder] = reason
        log.warning("background sync leaves %s alone: %s", folder, reason)
