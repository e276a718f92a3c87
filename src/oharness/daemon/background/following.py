"""The daemon follows every project folder this machine used, so background sync covers them all.

Any interface that opens a project's memory marks its folder (:mod:`oharness.project.used`);
background sync calls :meth:`ProjectFollower.follow` every few seconds while signed in, which
hosts each marked project not hosted yet, exactly as ``POST /workspaces`` would (never creating
one). Its notes are then scheduled like the rest: uploaded within seconds of a write, checked
for the other machines' changes every 20 s.

- A mark whose folder is gone, or is no project any more, is dropped.
- A project this daemon already hosts from another folder (a second clone on this machine) is
  not hosted (the API serves one folder per project), but its notes are synced all the same:
  the clone is its own replica, with its own sync state (:mod:`oharness.sync.replicas`). A
  folder copied by hand is synced the same way, and its passes stay paused with the reason,
  as ``oharness sync now`` there says. (A linked worktree shares its main worktree's notes
  folder, so there is nothing more to do.)
- :meth:`ProjectFollower.forget_project` (``DELETE /workspaces/{projectId}``) stops following
  every folder of the project until something uses one again.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Protocol

from oharness.daemon.errors import DaemonApiError
from oharness.daemon.workspaces import WorkspaceRegistry
from oharness.errors import OHarnessError
from oharness.memory.workspace import Workspace, open_workspace
from oharness.project.paths import HomeLayout
from oharness.project.used import UsedProject, forget_used, used_projects

log = logging.getLogger(__name__)
#: Refusals that mean the folder is no project any more: its mark goes.
_GONE = frozenset({"invalid_path", "not_a_project"})


class OtherFolders(Protocol):
    """Where the other clones of hosted projects are synced (the daemon's background sync)."""

    def add_folder(self, folder: str, workspace: Workspace) -> None: ...

    def drop_folder(self, folder: str) -> None: ...


class ProjectFollower:
    """Follows the project folders used on this machine (one per daemon)."""

    def __init__(self, registry: WorkspaceRegistry, home: Path) -> None:
        self._registry = registry
        self._layout = HomeLayout(home)
        #: Set by the daemon: syncs a second clone of a hosted project (None: such a folder
        #: is left alone).
        self.folders: OtherFolders | None = None
        #: Folders left alone, with why (said once).
        self._skipped: dict[str, str] = {}
        #: The second clones synced through ``folders``, with their project ids.
        self._others: dict[str, str] = {}
        self._lock = threading.Lock()

    def follow(self) -> list[Path]:
        """Follow every marked folder not followed yet; returns the folders newly followed."""
        with self._lock:
            hosted = {os.path.realpath(h.root) for h in self._registry.all()}
            added = []
            marked = set()
            for used in used_projects(self._layout):
                folder = os.path.realpath(used.root)
                if folder in self._others and not used.root.is_dir():
                    forget_used(used)  # a clone deleted: dropped below
                    continue
                marked.add(folder)
                known = folder in hosted or folder in self._skipped or folder in self._others
                if not known and self._host(used, folder):
                    added.append(used.root)
            for folder in sorted(self._others.keys() - marked):  # gone, or its mark removed
                self._drop_other(folder)
            return added

    def forget_project(self, project_id: str) -> None:
        """Stop following every folder of ``project_id`` (their marks go) until one is used
        again (the hosted folder itself is removed by the caller)."""
        with self._lock:
            for used in used_projects(self._layout):
                if used.project_id == project_id:
                    forget_used(used)
            for folder, owner in sorted(self._others.items()):
                if owner == project_id:
                    self._drop_other(folder)

    def _drop_other(self, folder: str) -> None:
        self._others.pop(folder, None)
        if self.folders is not None:
            self.folders.drop_folder(folder)
            log.info("background sync no longer follows %s", folder)

    def _host(self, used: UsedProject, folder: str) -> bool:
        root = used.root
        if not root.is_dir():
            forget_used(used)
            return False
        try:
            _, added = self._registry.register(root, home=self._layout.home, create=False)
        except DaemonApiError as exc:
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

    def _sync_other(self, used: UsedProject, folder: str, why: str) -> bool:
        """A second folder of a hosted project: synced as its own replica, not hosted."""
        if self.folders is None:
            self._skip(folder, why)
            return False
        try:
            workspace = open_workspace(used.root, self._layout.home, register=False)
        except OHarnessError as exc:
            self._skip(folder, exc.message)
            return False
        project = workspace.project
        if project is None or project.identity is None:
            workspace.close()
            forget_used(used)
            return False
        self.folders.add_folder(folder, workspace)
        self._others[folder] = project.identity.id
        log.info("background sync now follows %s (another folder of a hosted project)", folder)
        return True

    def _skip(self, folder: str, reason: str) -> None:
        self._skipped[folder] = reason
        log.warning("background sync leaves %s alone: %s", folder, reason)
