"""The page's handle on sync: the daemon's background sync when it runs, else the same library
over the workspace's home (spec 07.6: the page and the CLI offer the same switch and sync now).

Every section that touches sync (Cloud sync, Conflicts, To tidy up's commit-first merges) reads
the service and the targets from :func:`cloud_of`, so they never disagree about which folders
sync or where their state lives.
"""

from __future__ import annotations

from dataclasses import dataclass

from oharness.daemon.background.sync import DaemonSync
from oharness.daemon.page.view import PageView
from oharness.errors import OHarnessError
from oharness.sync.sync_service import SyncService, SyncTarget, sync_targets
from oharness.types import Scope


@dataclass(frozen=True)
class Cloud:
    """Sync for one page request."""

    service: SyncService
    targets: tuple[SyncTarget, ...]
    #: The daemon's background sync (None when this daemon runs without it).
    running: DaemonSync | None

    def target(self, scope: str) -> SyncTarget:
        """The target of ``scope`` (a clear refusal for a scope this workspace lacks)."""
        for target in self.targets:
            if target.scope == scope:
                return target
        from oharness.errors import UnavailableError

        raise UnavailableError(f"the {scope} notes do not sync here", scope=scope)

    @property
    def signed_in(self) -> bool:
        settings = self.service.settings
        try:
            return bool(settings.origin() and settings.token(self.service.environ_token))
        except OHarnessError:
            return False

    def wrote(self, scope: Scope) -> None:
        """A resolution changed a folder: its next pass should come soon."""
        if self.running is not None:
            for target in self.targets:
                if target.scope == scope:
                    self.running.coordinator.notify_write(target)


def cloud_of(view: PageView) -> Cloud:
    """Sync for the page's workspace."""
    running = view.state.sync
    hosted = view.hosted
    if running is not None:
        return Cloud(running.service, tuple(running.targets(hosted)), running)
    workspace = hosted.workspace
    service = SyncService(
        workspace.home,
        backups=workspace.service.backups(),
        clock=view.state.options.clock,
        environ_token=view.state.options.sync_token,
    )
    return Cloud(service, tuple(sync_targets(workspace)), None)
