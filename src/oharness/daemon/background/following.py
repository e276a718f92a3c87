"""The daemon hosts every project this machine used, so background sync covers them all.

Any interface that opens a project's memory marks it (:mod:`oharness.project.used`); background
sync calls :meth:`ProjectFollower.follow` every few seconds while signed in, which hosts each
marked project not hosted yet, exactly as ``POST /workspaces`` would (never creating one). Its
notes are then scheduled like the rest: uploaded within seconds of a write, checked for the
other machines' changes every 20 s.

- A mark whose folder is gone, or is no project any more, is dropped.
- A project this daemon already hosts from another folder (a second clone or worktree on this
  machine) is left alone, said once in the log: ``oharness sync now`` in that folder syncs it.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from oharness.daemon.errors import DaemonApiError
from oharness.daemon.workspaces import WorkspaceRegistry
from oharness.errors import OHarnessError
from oharness.project.paths import HomeLayout
from oharness.project.used import UsedProject, forget_used, used_projects

log = logging.getLogger(__name__)
#: Refusals that mean the folder is no project any more: its mark goes.
_GONE = frozenset({"invalid_path", "not_a_project"})


class ProjectFollower:
    """Hosts the projects used on this machine (one per daemon)."""

    def __init__(self, registry: WorkspaceRegistry, home: Path) -> None:
        self._registry = registry
        self._layout = HomeLayout(home)
        #: Folders left alone, with why (said once).
        self._skipped: dict[str, str] = {}
        self._lock = threading.Lock()

    def follow(self) -> list[Path]:
        """Host every marked project not hosted yet; returns the folders newly hosted."""
        with self._lock:
            hosted = {os.path.realpath(h.root) for h in self._registry.all()}
            added = []
            for used in used_projects(self._layout):
                folder = os.path.realpath(used.root)
                if folder in hosted or folder in self._skipped:
                    continue
                if self._host(used, folder):
                    added.append(used.root)
            return added

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
