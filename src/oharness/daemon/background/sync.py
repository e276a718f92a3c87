"""Background sync in the daemon (spec 07.5, 10): the one coordinator for every hosted folder.

- One :class:`~oharness.sync.coordinator.SyncCoordinator` and its loop thread serve every
  hosted workspace's project notes and the user notes (registered once, however many
  workspaces share them).
- It looks every ``poll_seconds`` (1 s; on the daemon's one folder-watching thread,
  :class:`~oharness.daemon.background.folder_watch.FolderWatch`, which walks each folder once a
  tick for every watcher) at: the sign-in (origin and token in
  ``cloud.json``/``credentials.json``) — folders are scheduled once signed in and dropped on
  sign-out, so a sign-in is noticed within seconds without a restart; each folder's listing
  (names, sizes, mtimes), so a note written by the CLI, ``oharness chat`` or an editor is
  uploaded within the coordinator's debounce; and the off switch in ``plugins.json``, so
  ``oharness sync off`` from another process closes a request in flight within a second.
- Switching off (here or elsewhere) cancels the pass in flight at once: the engine stops
  before its next request, and the HTTP client is closed, which aborts a request already
  sent; a fresh client serves the next pass.
- A pass run at once (``sync now`` from the REST API or the page) publishes the same events as
  the loop's passes, so a conflict or a pulled note it brings reaches every open page.
- The first look happens as the daemon starts, so a home already signed in has its folders
  scheduled before the daemon answers its first request; and a use of a project (a
  recall, an open Memory page) while its folders are not scheduled yet (signed out, or the
  look not done) is remembered and counts once they are, so the project's notes are checked
  then rather than at the next use.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx2

from oharness.daemon.background.abortable import AbortableHttp
from oharness.daemon.background.folder_watch import Signature, folder_signature
from oharness.daemon.events import Event, EventBus
from oharness.daemon.workspaces import DaemonWorkspace
from oharness.errors import OHarnessError
from oharness.memory.workspace import Workspace
from oharness.notes.store import NOTE_SUFFIX
from oharness.sync.coordinator import SyncCoordinator, SyncLoop, SyncTiming, directory_key
from oharness.sync.sync_service import PassReport, SyncService, SyncTarget, sync_targets
from oharness.types import Clock, Scope

log = logging.getLogger(__name__)
#: How often the marks of the projects used on this machine are read (seconds).
FOLLOW_SECONDS = 15.0
#: The key of another clone's targets: this prefix and the folder's real path.
_FOLDER = "folder:"


class DaemonSync:
    """The coordinator, its loop and the folder looks of one daemon."""

    def __init__(
        self,
        hosted: DaemonWorkspace,
        bus: EventBus,
        *,
        clock: Clock,
        token: str | None,
        poll_seconds: float = 1.0,
        transport: httpx2.BaseTransport | None = None,
        signature: Callable[[Path], Signature] = folder_signature,
        timing: SyncTiming | None = None,
        follow: Callable[[], object] | None = None,
        follow_seconds: float = FOLLOW_SECONDS,
    ) -> None:
        workspace = hosted.workspace
        #: A folder walked now (the daemon's folder watch's, so its later ticks agree).
        self._signature_now = signature
        self._bus = bus
        self._clock = clock
        self._transport = transport
        self._abortable = AbortableHttp()
        #: How often :meth:`folders` wants a look (seconds).
        self.interval = poll_seconds
        self._switch_checked = 0.0
        self._switch_on = True
        self._lock = threading.RLock()
        self.service = SyncService(
            workspace.home,
            backups=workspace.service.backups(),
            clock=clock,
            environ_token=token,
            http=self._new_http(),
            cancelled=self._switched_off_elsewhere,
        )
        self.coordinator = SyncCoordinator(self.service, clock=clock, timing=timing)
        #: Hosts the projects this machine used (called every ``follow_seconds`` signed in).
        self._follow = follow
        self._follow_seconds = follow_seconds
        self._followed_at: float | None = None
        self.loop = SyncLoop(self.coordinator, on_report=self._reported)
        self._workspaces: dict[str, DaemonWorkspace] = {}
        #: The notes of each hosted workspace (by project id) and the project notes of each
        #: other folder of a hosted project (another clone on this machine, by
        #: ``folder:<real path>``).
        self._targets: dict[str, list[SyncTarget]] = {}
        #: The workspaces of those other folders (closed when dropped or at stop).
        self._others: dict[str, Workspace] = {}
        self._signatures: dict[Path, Signature] = {}
        #: When each project was last used (ms), kept for folders not scheduled yet.
        self._used_at: dict[str, int] = {}
        self._signed_in = False
        self._scheduled: dict[Path, SyncTarget] = {}
        self._stopping = threading.Event()

    def _new_http(self) -> httpx2.Client:
        if self._transport is not None:
            return httpx2.Client(transport=self._transport)
        return self._abortable.client()

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """The loop thread (the looks come from the daemon's :class:`FolderWatch`)."""
        self.loop.start()

    def stop(self) -> None:
        """Stop: the pass in flight is cancelled (its requests aborted), the threads end."""
        self._stopping.set()
        self._abortable.abort()
        self.loop.stop(timeout=10.0)
        if self.service.http is not None:
            self.service.http.close()
        for key in list(self._others):
            self.drop_folder(key.removeprefix(_FOLDER))

    # ---- workspaces ------------------------------------------------------------------------

    def add(self, hosted: DaemonWorkspace) -> None:
        with self._lock:
            self._workspaces[hosted.key] = hosted
            targets = sync_targets(hosted.workspace)
            self._targets[hosted.key] = targets
            if self._signed_in:
                self._register(hosted.key)

    def remove(self, hosted: DaemonWorkspace) -> None:
        with self._lock:
            if self._signed_in:
                for target in self._targets.get(hosted.key, []):
                    self.coordinator.unregister(target)
            self._workspaces.pop(hosted.key, None)
            self._targets.pop(hosted.key, None)
            self._used_at.pop(hosted.key, None)

    def add_folder(self, folder: str, workspace: Workspace) -> None:
        """Sync the project notes of ``folder`` too: another clone of a project hosted from
        elsewhere (the API serves one folder per project; each clone is its own replica)."""
        key = _FOLDER + folder
        with self._lock:
            if key in self._targets:
                workspace.close()
                return
            self._others[key] = workspace
            self._targets[key] = [t for t in sync_targets(workspace) if t.scope == "project"]
            if self._signed_in:
                self._register(key)

    def folder_targets(self, folder: str, project_id: str) -> list[SyncTarget] | None:
        """The sync targets of ``folder`` (resolved), another clone of ``project_id`` added by
        :meth:`add_folder`; None when it is not one."""
        key = _FOLDER + folder
        with self._lock:
            workspace = self._others.get(key)
            project = workspace.project if workspace is not None else None
            if project is None or project.identity is None or project.identity.id != project_id:
                return None
            return list(self._targets.get(key, []))

    def drop_folder(self, folder: str) -> None:
        """Stop syncing a folder added by :meth:`add_folder` (gone, or no longer used)."""
        key = _FOLDER + folder
        with self._lock:
            workspace = self._others.pop(key, None)
            targets = self._targets.pop(key, [])
            if self._signed_in:
                for target in targets:
                    self.coordinator.unregister(target)
        if workspace is not None:
            workspace.close()

    def _register(self, project_id: str) -> None:
        registered = [self.coordinator.register(t) for t in self._targets.get(project_id, [])]
        self._targets[project_id] = registered
        used_at = self._used_at.get(project_id)
        for target in registered:
            self._signatures[directory_key(target)] = folder_signature(target.store.directory)
            if used_at is not None and target.scope == "project":
                self.coordinator.touch(target, now=used_at)  # used before it was scheduled

    def targets(self, hosted: DaemonWorkspace) -> list[SyncTarget]:
        with self._lock:
            known = self._targets.get(hosted.key)
            return list(known) if known is not None else sync_targets(hosted.workspace)

    def wrote(self, hosted: DaemonWorkspace, scope: Scope) -> None:
        for target in self.targets(hosted):
            if target.scope == scope:
                self.coordinator.notify_write(target)

    def sync_now(self, target: SyncTarget | None = None) -> list[PassReport]:
        """Passes at once (the REST API, the page), announced like the loop's own: every
        page hears the status, the conflicts and the notes a pass brought."""
        reports = self.coordinator.sync_now(target)
        for report in reports:
            try:
                self._reported(report)
            except Exception:
                log.exception("sync report listener failed")
        return reports

    def used(self, hosted: DaemonWorkspace) -> None:
        """The project is in use: its notes are checked (now, or once they are scheduled)."""
        with self._lock:
            self._used_at[hosted.key] = self._clock()
        for target in self.targets(hosted):
            if target.scope == "project":
                self.coordinator.touch(target)

    # ---- the switch ------------------------------------------------------------------------

    def _switched_off_elsewhere(self) -> bool:
        """Read the persisted switch (at most every 100 ms): True when sync is off (or the
        daemon is stopping)."""
        if self._stopping.is_set():
            return True
        now = time.monotonic()
        if now - self._switch_checked >= 0.1:
            self._switch_checked = now
            with contextlib.suppress(OHarnessError):  # unreadable: the pass reports it
                self._switch_on = self.service.settings.enabled()
        return not self._switch_on

    def set_enabled(self, enabled: bool) -> None:
        """Switch cloud sync on or off for every process; off aborts a request in flight."""
        self.coordinator.set_enabled(enabled)
        self._switch_on = enabled
        self._switch_checked = time.monotonic()
        if not enabled:
            self._abort_requests()
        self._publish_status("switched_on" if enabled else "switched_off")

    def _abort_requests(self) -> None:
        old, self.service.http = self.service.http, self._new_http()
        self._abortable.abort()
        if old is not None:
            old.close()

    # ---- watching --------------------------------------------------------------------------

    def _signed_in_now(self) -> bool:
        settings = self.service.settings
        try:
            return bool(settings.origin() and settings.token(self.service.environ_token))
        except OHarnessError:
            return False

    def watch_once(self) -> None:
        """One look at the sign-in, the switch and the folders (walked here)."""
        self.observe({folder: folder_signature(folder) for folder in self.folders()})

    def folders(self) -> list[Path]:
        """The sign-in and the switch looked at; the scheduled folders to walk."""
        was_on = self._switch_on
        if self._switched_off_elsewhere() and was_on:
            self._abort_requests()
        if self._switch_on != was_on and not self._stopping.is_set():  # flipped elsewhere
            self._publish_status("switched_on" if self._switch_on else "switched_off")
            if self._switch_on:
                self.loop.wake()  # the loop sleeps while off: the waiting writes go now
        signed_in = self._signed_in_now()
        with self._lock:
            if signed_in and not self._signed_in:
                self._signed_in = True
                for project_id in list(self._targets):
                    self._register(project_id)
                self._publish_status("signed_in")
            elif not signed_in and self._signed_in:
                self._signed_in = False
                for targets in self._targets.values():
                    for target in targets:
                        self.coordinator.unregister(target)
                self._publish_status("signed_out")
            self._scheduled = (
                {directory_key(t): t for ts in self._targets.values() for t in ts}
                if self._signed_in
                else {}
            )
            folders = [target.store.directory for target in self._scheduled.values()]
        self._follow_used(signed_in)
        return folders

    def _follow_used(self, signed_in: bool) -> None:
        """Host the projects used on this machine since the last look (signed in only)."""
        now = time.monotonic()
        if self._follow is None or not signed_in or self._stopping.is_set():
            return
        if self._followed_at is not None and now - self._followed_at < self._follow_seconds:
            return
        self._followed_at = now
        try:
            self._follow()
        except Exception:  # the next look tries again
            log.exception("following the projects used on this machine failed")

    def observe(self, signatures: Mapping[Path, Signature]) -> None:
        """A write noted for every scheduled folder whose listing changed."""
        for key, target in self._scheduled.items():
            signature = signatures.get(target.store.directory)
            if signature is not None and signature != self._signatures.get(key):
                self._signatures[key] = signature
                self.coordinator.notify_write(target)

    # ---- events ----------------------------------------------------------------------------

    def _publish_status(self, change: str, scope: str | None = None) -> None:
        data: dict[str, object] = {"change": change}
        if scope is not None:
            data["scope"] = scope
        self._bus.publish(Event("sync_status", data))

    def _reported(self, report: PassReport) -> None:
        target = report.target
        key = directory_key(target)
        before = self._signatures.get(key)
        after = self._signatures[key] = self._signature_now(target.store.directory)
        if before is not None and _written_by_others(before, after, report):
            self.coordinator.notify_write(target)  # landed after the pass read the folder
        result = report.result
        data: dict[str, object] = {"scope": target.scope, "key": target.scope_key}
        if report.paused:
            data["paused"] = True
        if report.error:
            data["error"] = report.error.get("code")
        if result is not None:
            data.update(
                pushed=len(result.pushed), pulled=len(result.pulled), merged=len(result.merged)
            )
        self._bus.publish(Event("sync_status", data, workspace=target.project_id))
        if result is not None and result.conflicts:
            self._bus.publish(
                Event(
                    "conflicts",
                    {"scope": target.scope, "ids": list(result.conflicts)},
                    workspace=target.project_id,
                )
            )
        if result is not None and (result.pulled or result.merged or result.deleted_here):
            self._bus.publish(
                Event(
                    "memory_changed",
                    {"scope": target.scope, "source": "sync"},
                    workspace=target.project_id,
                )
            )


def _written_by_others(before: Signature, after: Signature, report: PassReport) -> bool:
    """Whether a note file changed between the folder's last look and the end of a pass
    other than by the pass itself (a write the pass may have missed: it is synced next)."""
    names = {name for name, _, _ in set(before) ^ set(after)}
    result = report.result
    if result is not None:
        written = (*result.pulled, *result.merged, *result.deleted_here)
        names -= {note_id + NOTE_SUFFIX for note_id in written}
    return bool(names)
