"""The memory plugin's background syncer: this workspace's notes folders on the process-wide
sync coordinator (spec 07.5, 09.1).

One :class:`~oharness.sync.coordinator.SyncCoordinator` (and its loop thread) serves every
harness of a process with the same ``OHARNESS_HOME``; each harness registers its folders when
it starts and unregisters them when it closes, and the loop stops with the last one. Nothing
is started unless sync is set up (an origin in ``cloud.json``): a machine that never signed in
runs no thread and makes no request. Local writes through the tools are reported
(``notify_write``) and each user message marks the project as in use (``touch``).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from oharness.errors import OHarnessError
from oharness.memory.workspace import Workspace
from oharness.project.paths import HomeLayout
from oharness.sync.coordinator import SyncCoordinator, SyncLoop
from oharness.sync.daemon_lock import daemon_running
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import SyncService, SyncTarget, sync_targets
from oharness.types import Clock, Scope

log = logging.getLogger(__name__)


@dataclass
class _Shared:
    coordinator: SyncCoordinator
    loop: SyncLoop | None
    users: int = 0


_lock = threading.Lock()
_shared: dict[str, _Shared] = {}


def _home_key(home: HomeLayout) -> str:
    return os.path.realpath(home.home)


def acquire_coordinator(
    workspace: Workspace, *, clock: Clock, token: str | None
) -> SyncCoordinator:
    """The process-wide coordinator of this home (created, with its loop, on first use)."""
    key = _home_key(workspace.home)
    with _lock:
        shared = _shared.get(key)
        if shared is None:
            service = SyncService(
                workspace.home,
                backups=workspace.service.backups(),
                clock=clock,
                environ_token=token,
            )
            coordinator = SyncCoordinator(service, clock=clock)
            loop = SyncLoop(coordinator)
            loop.start()
            shared = _Shared(coordinator, loop)
            _shared[key] = shared
        shared.users += 1
        return shared.coordinator


def release_coordinator(home: HomeLayout) -> None:
    """One user fewer; the loop stops with the last one."""
    key = _home_key(home)
    with _lock:
        shared = _shared.get(key)
        if shared is None:
            return
        shared.users -= 1
        if shared.users > 0:
            return
        del _shared[key]
    if shared.loop is not None:
        shared.loop.stop(timeout=5.0)


class MemorySync:
    """A background service: register on start, report writes and use, unregister on stop."""

    name = "memory.sync"

    def __init__(
        self,
        workspace: Workspace,
        *,
        clock: Clock,
        token: str | None = None,
        coordinator: SyncCoordinator | None = None,
    ) -> None:
        self._workspace = workspace
        self._clock = clock
        self._token = token
        self._given = coordinator
        self._coordinator: SyncCoordinator | None = None
        self._targets: dict[Scope, SyncTarget] = {}
        self._shared = False

    @property
    def active(self) -> bool:
        return self._coordinator is not None

    def _configured(self) -> bool:
        try:
            return SyncSettingsFile(self._workspace.home).origin() is not None
        except OHarnessError:
            return False

    def start(self) -> None:
        """Register the folders (with the given coordinator, or the process-wide one)."""
        coordinator = self._given
        if coordinator is None:
            if not self._configured() or not self._workspace.user_available:
                return  # never signed in (or no home for sync state): nothing to run
            if daemon_running(self._workspace.home.home):
                return  # the daemon schedules these folders and notices our writes
            coordinator = acquire_coordinator(self._workspace, clock=self._clock, token=self._token)
            self._shared = True
        self._coordinator = coordinator
        for target in sync_targets(self._workspace):
            self._targets[target.scope] = coordinator.register(target)

    def stop(self) -> None:
        """Unregister the folders (and release the process-wide coordinator)."""
        coordinator, self._coordinator = self._coordinator, None
        if coordinator is None:
            return
        for target in self._targets.values():
            coordinator.unregister(target)
        self._targets.clear()
        if self._shared:
            self._shared = False
            release_coordinator(self._workspace.home)

    def wrote(self, scope: Scope) -> None:
        """A note of ``scope`` was written or deleted here."""
        target = self._targets.get(scope)
        if self._coordinator is not None and target is not None:
            self._coordinator.notify_write(target)

    def touched(self) -> None:
        """The project is in use (a message was sent)."""
        target = self._targets.get("project")
        if self._coordinator is not None and target is not None:
            self._coordinator.touch(target)
