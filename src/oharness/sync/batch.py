"""Batch edits committed to the cloud before this machine (spec 06.4 commitFirst, 05.2).

A merge (or any batch edit nobody reviews note by note) must not become a sync conflict on
other devices. :class:`CommitFirst` therefore:

1. runs an ordinary sync pass over the scope (so this machine has every remote change) —
   when another pass holds the scope (the daemon's background pass, ``oharness sync`` in
   another process), it waits for that pass to end, at most ``pass_wait_s`` (2 minutes) and
   never past a cancellation, then runs its own;
2. under the scope's sync lock, checks that every note the batch depends on still has the
   content hash it was planned with, is fully synced (its base entry has that hash, nothing
   pending, no open conflict), and that the scope has not moved on since the pass (one small
   ``snapshot`` with ``since``: its answer also gives the server's per-note limit);
3. commits the batch with ``atomic: true`` and ``baseVersion`` = the version checked;
4. only when the service accepted it, writes the batch locally (the caller's callback) and
   records the new revisions in the base.

Another device's edit in between makes the service refuse (412 ``manifest_changed`` or 409
``conflict``): the batch is refused with an explanation and nothing changes on either side.
When the scope moved on only through unrelated notes, the whole check runs once more. A lost
answer leaves this machine unchanged; the next pass brings whatever the service holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import filelock

from oharness.errors import ConflictError, LimitError, StorageError, SyncError, UnavailableError
from oharness.fsio import PRIVATE_FILE_MODE
from oharness.notes.format import file_revision, parse_note_bytes
from oharness.sync.ancestor import AncestorStore, BaseNote, BaseState
from oharness.sync.client import SyncClient
from oharness.sync.conflicts import ConflictBook
from oharness.sync.encryption import sealed_client_for
from oharness.sync.protocol import (
    Change,
    CommitRequest,
    CommitResponse,
    SnapshotRequest,
    SyncScope,
)
from oharness.sync.sync_service import PassReport, SyncService, SyncTarget, sync_targets
from oharness.types import Scope

if TYPE_CHECKING:
    from oharness.memory.workspace import Workspace

log = logging.getLogger(__name__)
Writes = Sequence[tuple[str, bytes | None]]
_ATTEMPTS = 2
_LOCK_TIMEOUT_S = 30.0
#: How long a batch waits for another pass over its scope to end before it gives up.
PASS_WAIT_S = 120.0
_WAIT_SLICE_S = 0.1


def sync_is_on(service: SyncService, target: SyncTarget) -> bool:
    """True when this scope syncs: switched on, signed in, and the scope not switched off."""
    settings = service.settings
    if not settings.enabled() or not settings.origin():
        return False
    if not settings.token(service.environ_token):
        return False
    return settings.target(target.scope_key).enabled is not False


def last_plan(service: SyncService, target: SyncTarget) -> str | None:
    """The plan (``free``/``paid``) the last sync response of this scope gave, if any."""
    status = service.base(target).load_status()
    last_pass = status.get("lastPass")
    if isinstance(last_pass, dict) and last_pass.get("plan") in ("free", "paid"):
        return str(last_pass["plan"])
    account = status.get("account")
    if isinstance(account, dict) and account.get("plan") in ("free", "paid"):
        return str(account["plan"])
    return None


@dataclass
class _Checked:
    state: BaseState
    version: int
    max_body_bytes: int


class _Retry(Exception):
    """The scope moved on between the pass and the check: run them again."""


def commit_first_for(
    service: SyncService, workspace: Workspace, *, pass_wait_s: float = PASS_WAIT_S
) -> CommitFirst:
    """The commit-first path over a workspace's sync targets."""
    targets = {target.scope: target for target in sync_targets(workspace)}
    return CommitFirst(service, targets, pass_wait_s=pass_wait_s)


class CommitFirst:
    """The commit-first path for the scopes of one home (``BatchCommitter`` of the review)."""

    def __init__(
        self,
        service: SyncService,
        targets: Mapping[Scope, SyncTarget],
        *,
        pass_wait_s: float = PASS_WAIT_S,
    ) -> None:
        self.service = service
        self.targets = dict(targets)
        self.pass_wait_s = pass_wait_s

    def syncs(self, scope: Scope) -> bool:
        """True when ``scope`` syncs: its batches go through :meth:`commit_first`."""
        target = self.targets.get(scope)
        return target is not None and sync_is_on(self.service, target)

    def _target(self, scope: Scope) -> SyncTarget:
        target = self.targets.get(scope)
        if target is None:
            raise UnavailableError(f"the {scope} scope does not sync here", scope=scope)
        return target

    def _client(self) -> SyncClient:
        settings = self.service.settings
        origin, token = settings.origin(), settings.token(self.service.environ_token)
        if not origin or not token:
            raise SyncError(
                "not signed in: run 'oharness login --origin URL'", code="not_logged_in"
            )
        return sealed_client_for(
            self.service.home,
            origin,
            token,
            http=self.service.http,
            on_request=self.service.on_request,
        )

    def _sync_first(self, target: SyncTarget) -> None:
        report = self._pass_after_others(target)
        problem = report.paused or (report.error or {}).get("message")
        if report.result is not None and report.result.skipped:
            problem = f"{report.result.skipped}, still after {self.pass_wait_s:g} s"
        if problem:
            raise SyncError(
                f"{target.label} must be synced before a merge, and could not be ({problem}); "
                "nothing was changed: try again when sync works",
                code=(report.error or {}).get("code", "not_synced"),
            )
        account = self.service.base(target).load_status().get("account")
        if isinstance(account, dict) and 2 not in (account.get("protocols") or [2]):
            raise UnavailableError(
                "the sync server is too old for merges committed to the cloud first; upgrade it"
            )

    def _pass_after_others(self, target: SyncTarget) -> PassReport:
        """A pass of ``target``, after any pass another thread or process has in flight."""
        deadline = time.monotonic() + self.pass_wait_s
        while True:
            report = self.service.run(target)
            if report.result is None or report.result.skipped is None:
                return report
            log.info("%s: waiting for the sync pass in flight to end", target.label)
            if not self._wait_for_lock(target, deadline):
                return report

    def _wait_for_lock(self, target: SyncTarget, deadline: float) -> bool:
        """Wait until the scope's sync lock is free (True), or until ``deadline`` (False);
        a cancellation (sync switched off, the task cancelled) stops the wait at once."""
        lock = filelock.FileLock(
            self.service.base(target).lock_path, timeout=0, mode=PRIVATE_FILE_MODE
        )
        cancelled = self.service.cancelled
        while (left := deadline - time.monotonic()) > 0:
            if cancelled is not None and cancelled():
                raise SyncError(
                    f"{target.label}: stopped waiting for the sync pass in flight (cancelled); "
                    "nothing was changed",
                    code="cancelled",
                )
            try:
                lock.acquire(timeout=min(_WAIT_SLICE_S, left), poll_interval=0.02)
            except filelock.Timeout:
                continue
            lock.release()
            return True
        return False

    def commit_first(
        self,
        scope: Scope,
        writes: Writes,
        expected: Mapping[str, str],
        write_locally: Callable[[], None],
    ) -> int | None:
        """Sync, check, commit atomically, then write locally; returns the new version."""
        target = self._target(scope)
        for attempt in range(_ATTEMPTS):
            self._sync_first(target)
            try:
                return self._locked_commit(target, writes, expected, write_locally)
            except _Retry:
                if attempt + 1 == _ATTEMPTS:
                    break
        raise ConflictError(
            f"{target.label} kept changing while the merge was being committed (another device "
            "is writing, or the last sync did not complete: see 'oharness sync status'); nothing "
            "was changed: try again in a moment",
            reason="manifest_changed",
        )

    def _locked_commit(
        self,
        target: SyncTarget,
        writes: Writes,
        expected: Mapping[str, str],
        write_locally: Callable[[], None],
    ) -> int | None:
        base = self.service.base(target)
        lock = filelock.FileLock(base.lock_path, timeout=_LOCK_TIMEOUT_S, mode=PRIVATE_FILE_MODE)
        try:
            lock.acquire()
        except filelock.Timeout as exc:
            raise StorageError(
                f"{target.label} are being synced by another process; nothing was changed: "
                "try again in a moment"
            ) from exc
        try:
            client = self._client()
            try:
                checked = self._check(target, base, client, expected)
                self._check_sizes(writes, checked.max_body_bytes)
                response = self._commit(target, client, writes, checked)
            finally:
                client.close()
            try:
                write_locally()
            except Exception:
                log.exception("merge committed to the cloud but not written here")
                raise
            self._record(base, checked, writes, response)
            return response.version
        finally:
            lock.release()

    def _check(
        self,
        target: SyncTarget,
        base: AncestorStore,
        client: SyncClient,
        expected: Mapping[str, str],
    ) -> _Checked:
        state = base.load()
        store = target.store
        store.refresh(full=True)
        conflicts = ConflictBook(base.conflicts).ids()
        changed, unsynced = [], []
        for note_id, wanted in expected.items():
            stored = store.get(note_id)
            if stored is None or stored.note.content_hash != wanted:
                changed.append(note_id)
                continue
            entry = state.notes.get(note_id)
            if (
                entry is None
                or entry.hash != wanted
                or note_id in state.pending
                or note_id in conflicts
            ):
                unsynced.append(note_id)
        if changed:
            raise ConflictError(
                f"{', '.join(changed)} changed (on another device or here) since the merge was "
                "planned; nothing was changed: review the notes and plan the merge again",
                ids=changed,
                reason="stale_plan",
            )
        if unsynced or state.version is None:
            raise ConflictError(
                f"{', '.join(unsynced) or 'the scope'} is not fully synced yet (an upload "
                "pending, a conflict or a refusal); nothing was changed: sync, resolve, then "
                "merge again",
                ids=unsynced,
                reason="not_synced",
            )
        snapshot = client.snapshot(
            SnapshotRequest(SyncScope(target.scope, target.project_id), since=state.version)
        )
        if not snapshot.unchanged or snapshot.version != state.version:
            raise _Retry()
        return _Checked(state, state.version, self._body_limit(target, snapshot.quotas))

    def _body_limit(self, target: SyncTarget, quotas: object) -> int:
        limit = int(getattr(quotas, "max_body_bytes", 0)) or 1 << 62
        account = self.service.base(target).load_status().get("account")
        plan_limits = account.get("planLimits") if isinstance(account, dict) else None
        if isinstance(plan_limits, dict) and isinstance(plan_limits.get("maxBodyBytes"), int):
            limit = min(limit, plan_limits["maxBodyBytes"])
        return limit

    @staticmethod
    def _check_sizes(writes: Writes, limit: int) -> None:
        for note_id, data in writes:
            if data is None:
                continue
            size = len(parse_note_bytes(data).body.encode("utf-8"))
            if size > limit:
                raise LimitError(
                    f"the merged body of {note_id} is {size} bytes, over the sync service's "
                    f"limit of {limit}; shorten the draft (nothing was changed)",
                    limit=limit,
                )

    def _commit(
        self, target: SyncTarget, client: SyncClient, writes: Writes, checked: _Checked
    ) -> CommitResponse:
        changes = []
        for note_id, data in writes:
            entry = checked.state.notes[note_id]
            if data is None:
                changes.append(Change("delete", note_id, entry.rev))
            else:
                changes.append(Change("put", note_id, entry.rev, data.decode("utf-8")))
        request = CommitRequest(
            SyncScope(target.scope, target.project_id),
            tuple(changes),
            base_version=checked.version,
            atomic=True,
        )
        try:
            response = client.commit(request)
        except SyncError as exc:
            if exc.code == "manifest_changed":
                raise _Retry() from exc
            if exc.code == "conflict":
                raise ConflictError(
                    f"the sync service refused the merge: a note changed on another device "
                    f"({exc.message}); nothing was changed: sync and plan the merge again",
                    reason="conflict",
                ) from exc
            if exc.code == "network":
                raise SyncError(
                    "the sync server did not answer the merge; nothing was changed here, and "
                    "the next sync brings whatever the service kept",
                    code="network",
                ) from exc
            raise SyncError(
                f"the sync service refused the merge ({exc.message}); nothing was changed",
                code=exc.code,
                status=exc.status,
            ) from exc
        if response.rejected:  # an atomic commit applies all or nothing: never expected
            raise SyncError(
                "the sync service refused part of an atomic merge "
                f"({response.rejected[0].message})",
                code="rejected",
            )
        return response

    @staticmethod
    def _record(
        base: AncestorStore, checked: _Checked, writes: Writes, response: CommitResponse
    ) -> None:
        state = base.load()
        for note_id, data in writes:
            if data is None:
                state.notes.pop(note_id, None)
                continue
            rev = file_revision(data)
            base.write_copy(note_id, rev, data)
            state.notes[note_id] = BaseNote(rev, parse_note_bytes(data).content_hash)
        if state.version == checked.version and response.version == checked.version + 1:
            # The position is the commit's whole identity: a version beside the commit id of
            # the one before reads as a storage reset to the next pass.
            state.version, state.commit = response.version, response.commit
            state.generation = response.generation or state.generation
        base.save(state)
