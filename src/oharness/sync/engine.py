"""One sync pass over one scope (spec 07.1–07.4): snapshot, plan, apply, commit, advance.

Order matters for crash safety, and every step is written so that a crash anywhere leaves a
state from which the next pass neither loses an edit nor re-applies a stale one:

1. under the scope's cross-process lock (a process that cannot take it skips the pass);
2. local notes are read fresh; unparseable and unloaded files are unsyncable, never deletions;
3. a snapshot (delta since the version last seen, or a full listing with ``have`` hashes);
4. downloads, local deletions and merges are written to disk first (each replaced or removed
   local file backed up), and only then recorded in the base;
5. uploads go in commits of at most ``maxChangesPerCommit``; each applied change is recorded in
   the base only after the server accepted it;
6. the manifest version last seen moves forward only when every remote change was handled.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import filelock

from oharness.errors import ConflictError, OHarnessError, StorageError, SyncError
from oharness.merge.note import merge_notes
from oharness.notes.backups import BackupStore
from oharness.notes.format import Note, file_revision, parse_note_bytes, serialise_note_bytes
from oharness.notes.store import NoteStore, StoredNote
from oharness.sync.base import BaseNote, BaseState, HeldChange, PendingNote, SyncBase
from oharness.sync.client import SyncClient
from oharness.sync.conflicts import ConflictBook, ConflictRecord
from oharness.sync.local import classify_local, release_visible_deletions
from oharness.sync.plan import (
    Action,
    BaseView,
    Kind,
    LocalState,
    RemoteState,
    RemoteView,
    plan_sync,
)
from oharness.sync.position import (
    follow_cloud,
    forget_remote,
    hold_blocked,
    release_held,
    stale_conflict_revs,
    storage_was_reset,
)
from oharness.sync.protocol import (
    Change,
    Quotas,
    SnapshotRequest,
    SnapshotResponse,
    SyncScope,
)
from oharness.sync.result import PassResult
from oharness.sync.upload import Position, Uploader, refuse_case_collisions
from oharness.types import Clock

__all__ = ["PassResult", "ScopeSync"]

log = logging.getLogger(__name__)
_PENDING_ROUNDS = 64
#: Rounds of a pass while the server refuses changes as compare-and-swap races.
_CAS_ROUNDS = 3


@dataclass(eq=False)
class _Local:
    """A syncable local note; its bytes are read only when a step needs them."""

    stored: StoredNote

    @cached_property
    def data(self) -> bytes:
        """The file's bytes, exactly the version the pass planned with (else a conflict)."""
        try:
            data = self.stored.path.read_bytes()
        except OSError as exc:
            raise StorageError(f"cannot read {self.stored.path}: {exc}") from exc
        if file_revision(data) != self.stored.revision:
            raise ConflictError(
                f"{self.stored.id} changed on disk during the sync pass; the next pass takes it",
                id=self.stored.id,
            )
        return data


class ScopeSync:
    """Sync of one notes directory with one scope on the server."""

    def __init__(
        self,
        *,
        store: NoteStore,
        base: SyncBase,
        client: SyncClient,
        scope: SyncScope,
        scope_key: str,
        backups: BackupStore,
        clock: Clock,
        protocol: int = 2,
        progress: Callable[[str, int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.store = store
        self.base = base
        self.client = client
        self.scope = scope
        self.scope_key = scope_key
        self.backups = backups
        self.clock = clock
        self.protocol = protocol
        self.conflicts = ConflictBook(base.conflicts)
        self._progress = progress
        self._cancelled = cancelled

    def _check_cancelled(self) -> None:
        """Sync switched off mid-pass: stop before the next request (the base stays valid)."""
        if self._cancelled is not None and self._cancelled():
            raise SyncError("sync was switched off; the pass stopped", code="cancelled")

    # ---- entry point -------------------------------------------------------------------

    def run(self) -> PassResult:
        """One pass; returns what it did. Request-level failures raise :class:`SyncError`.

        A change the server refused as a compare-and-swap race (another machine committed the
        note meanwhile) is planned again at once against the newer listing -- merged, pulled
        or recorded as a conflict -- a few times; still racing after that, it is reported."""
        self.base.folder.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(self.base.lock_path, timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            return PassResult(skipped="another process is syncing this scope")
        try:
            result = PassResult()
            for _ in range(_CAS_ROUNDS):
                refused, behind = self._run(result)
                if not refused and not behind:
                    break
            else:
                result.errors.extend(
                    {
                        "id": note_id,
                        "code": "conflict",
                        "message": f"{note_id} kept changing on the server during this pass; "
                        "the next pass takes it up again",
                    }
                    for note_id in refused
                )
            return result
        finally:
            lock.release()

    def _run(self, result: PassResult) -> tuple[list[str], bool]:
        """One round of a pass: the ids the server refused as CAS races, and whether the base
        is behind its own commits (another machine committed in between, so the position
        could not move past them: one more round catches up, else a restore of the storage
        back to the old position would hide that those commits were lost)."""
        result.errors, result.rejected = [], []
        state = self.base.load()
        state.directory = str(self.store.directory)
        self.store.refresh(full=True)
        local, blocked = self._local_notes(state, result)
        snapshot = self._snapshot(state, local)
        if storage_was_reset(state, snapshot):
            log.warning("the sync storage was reset or restored: re-syncing as a first sync")
            forget_remote(state)
            result.reset = True
            snapshot = self._snapshot(state, local)
        result.plan = snapshot.plan
        quotas = snapshot.quotas
        bodies = dict(snapshot.objects)
        view = self._remote_view(snapshot)
        blocked, result.problems = release_visible_deletions(blocked, result.problems, view.entries)
        result.unsyncable = [problem.file for problem in result.problems]
        remote = hold_blocked(state, view, blocked)
        self._promote_pending(state, local, remote)
        plan_base = {
            note_id: BaseView(entry.rev, entry.hash, self.base.has_copy(note_id, entry))
            for note_id, entry in state.notes.items()
        }
        conflicted = self.conflicts.ids()
        actions = plan_sync(
            {note_id: LocalState(item.stored.note.content_hash) for note_id, item in local.items()},
            plan_base,
            remote,
            unsyncable=blocked,
            conflicted=conflicted,
        )
        self._repair_copies(state, local)
        stale_records = stale_conflict_revs(self.conflicts, conflicted, remote)
        complete = self._fetch_bodies(
            self._needed_revs(actions, bodies, local, state) | stale_records,
            bodies,
            snapshot.version,
        )
        follow_cloud(self.conflicts, conflicted, remote, bodies)
        uploads: list[tuple[Change, bytes | None]] = []
        with self.store.batch():
            self._announce_downloads(actions, bodies, local, state)
            for action in actions:
                try:
                    upload = self._apply(action, state, local, bodies, quotas, result)
                except OHarnessError as exc:
                    result.errors.append(
                        {"id": action.id, "code": exc.code, "message": exc.message}
                    )
                    complete = False
                    continue
                if upload is not None:
                    uploads.append(upload)
            state.pending = {k: v for k, v in state.pending.items() if v.kind != "download"}
        release_held(state, blocked, {error["id"] for error in result.errors})
        self.base.save(state)  # everything pulled is on disk: record it
        self.base.clear_landed()
        uploads = refuse_case_collisions(uploads, state, result.rejected)
        outcome = Uploader(
            base=self.base,
            client=self.client,
            scope=self.scope,
            protocol=self.protocol,
            progress=self._progress,
            check_cancelled=self._check_cancelled,
        ).upload(uploads, state, quotas, Position(snapshot.version, snapshot.commit))
        for note_id, current in outcome.refused.items():
            # The server said where the note is now: the next round plans against that.
            state.held[note_id] = HeldChange(current or "", None, deleted=current is None)
        result.pushed.extend(outcome.pushed)
        result.rejected.extend(outcome.rejected)
        result.errors.extend(outcome.errors)
        result.changed_anything = result.changed_anything or bool(
            outcome.refused or outcome.rejected
        )
        if complete and not outcome.refused and not outcome.errors:
            # Never past a remote change this pass did not apply: a refused compare-and-swap
            # or a failed upload keeps the old position, so the next delta lists it again.
            state.version, state.commit = outcome.position.version, outcome.position.commit
            state.generation = outcome.generation or snapshot.generation or state.generation
            state.protocol = self.protocol
        result.version = state.version
        result.conflicts = sorted(self.conflicts.ids())
        self.base.save(state)
        behind = bool(outcome.pushed) and not outcome.claimed
        return sorted(outcome.refused), behind

    # ---- write-ahead -------------------------------------------------------------------

    def _promote_pending(
        self, state: BaseState, local: dict[str, _Local], remote: RemoteView
    ) -> None:
        """Versions a previous pass sent or wrote without recording: join the base if landed."""
        journal = self.base.landed() if state.pending else set()
        for note_id, pending in state.pending.items():
            if pending.kind == "download":
                item = local.get(note_id)
                landed = (note_id, pending.rev) in journal or (
                    item is not None and item.stored.note.content_hash == pending.hash
                )
            else:
                entry = remote.entries.get(note_id)
                item = local.get(note_id)
                # Listed at this revision. Or a new note, deleted since (after a later edit
                # elsewhere) while this machine still holds exactly what it sent: it was seen
                # there, so the delete must win (backed up), not a re-upload of a stale copy. An
                # edit of a synced note is not promoted on a tombstone: had it never landed, it
                # would be an edit lost to a delete (changed here, deleted there: re-create).
                landed = entry is not None and (
                    entry.rev == pending.rev
                    or (
                        entry.deleted
                        and note_id not in state.notes
                        and item is not None
                        and item.stored.note.content_hash == pending.hash
                    )
                )
            if landed:
                state.notes[note_id] = BaseNote(pending.rev, pending.hash)
        state.pending = {}

    def _announce_downloads(
        self,
        actions: list[Action],
        bodies: dict[str, str],
        local: dict[str, _Local],
        state: BaseState,
    ) -> None:
        """Record every download before its file is written (one save for the batch)."""
        for action in actions:
            if action.kind is not Kind.DOWNLOAD or action.remote is None:
                continue
            data = self._remote_bytes(action, bodies, local, state)
            if data is None:
                continue
            note = parse_note_bytes(data)
            self.base.write_copy(action.id, action.remote.rev, data)
            state.pending[action.id] = PendingNote(action.remote.rev, note.content_hash, "download")
        if state.pending:
            self.base.save(state)

    # ---- reading -----------------------------------------------------------------------

    def _local_notes(
        self, state: BaseState, result: PassResult
    ) -> tuple[dict[str, _Local], set[str]]:
        """Syncable notes, and the ids of files that cannot sync now (listed in ``result``)."""
        if self.store.remove_stale_temp_files():  # the same cleanup as every note write
            self.store.refresh(full=True)
        syncable, problems = classify_local(self.store, state.notes, self.protocol, self.base)
        result.problems = problems
        result.unsyncable = [problem.file for problem in problems]
        blocked = {problem.id for problem in problems if problem.id is not None}
        return {note_id: _Local(stored) for note_id, stored in syncable.items()}, blocked

    def _snapshot(self, state: BaseState, local: dict[str, _Local]) -> SnapshotResponse:
        # Another protocol than the last pass's lists other notes (typed ones): start over.
        # Version 0 is an empty storage, which has no generation or commit id to check: with
        # notes in the base (uploaded since, by commits it could not claim), a reset back to
        # empty would look "unchanged", so ask for the (tiny) full listing.
        same_protocol = state.protocol in (None, self.protocol)
        stale_empty = state.version == 0 and bool(state.notes)
        since = state.version if same_protocol and not stale_empty else None
        have: frozenset[str] = frozenset()
        if since is None:
            have = frozenset(item.stored.note.content_hash for item in local.values()) | {
                entry.hash for entry in state.notes.values()
            }
        self._check_cancelled()
        return self.client.snapshot(
            SnapshotRequest(
                self.scope,
                protocol=self.protocol,
                since=since,
                have=have,
                generation=state.generation,
                since_commit=state.commit if since is not None else None,
            )
        )

    @staticmethod
    def _remote_view(snapshot: SnapshotResponse) -> RemoteView:
        if snapshot.unchanged:
            return RemoteView({}, full=False)
        entries: dict[str, RemoteState] = {
            tomb.id: RemoteState(tomb.rev, deleted=True) for tomb in snapshot.tombstones
        }
        entries.update({note.id: RemoteState(note.rev, note.hash) for note in snapshot.notes})
        return RemoteView(entries, full=snapshot.full)

    def _repair_copies(self, state: BaseState, local: dict[str, _Local]) -> None:
        """A missing copy of a note that is the same on this machine is rewritten from it."""
        for note_id, entry in state.notes.items():
            item = local.get(note_id)
            if (
                item is not None
                and item.stored.note.content_hash == entry.hash
                and not self.base.has_copy(note_id, entry)
            ):
                with contextlib.suppress(OHarnessError):  # changed meanwhile: next pass
                    self.base.write_copy(note_id, entry.rev, item.data)

    def _needed_revs(
        self,
        actions: list[Action],
        bodies: dict[str, str],
        local: dict[str, _Local],
        state: BaseState,
    ) -> set[str]:
        """Revisions whose bodies the plan needs and neither the snapshot nor the disk has."""
        return {
            action.remote.rev
            for action in actions
            if action.kind in (Kind.DOWNLOAD, Kind.MERGE, Kind.CONFLICT)
            and action.remote is not None
            and not action.remote.deleted
            and action.remote.rev not in bodies
            and self._known_text(action.id, action.remote, local, state) is None
        }

    def _fetch_bodies(self, needed: set[str], bodies: dict[str, str], version: int) -> bool:
        """Ask for the bodies the snapshot did not carry; True when all arrived.

        The follow-up names the version just listed, so the server answers ``unchanged`` with
        only the wanted bodies instead of listing everything again.
        """
        for _ in range(_PENDING_ROUNDS):
            wanted = sorted(needed - bodies.keys())
            if not wanted:
                return True
            if self._progress is not None:
                self._progress("download", len(needed) - len(wanted), len(needed))
            self._check_cancelled()
            reply = self.client.snapshot(
                SnapshotRequest(
                    self.scope, protocol=self.protocol, since=version, want=tuple(wanted)
                )
            )
            if not reply.objects:
                return False
            bodies.update(reply.objects)
        return not (needed - bodies.keys())

    def _known_text(
        self, note_id: str, remote: RemoteState, local: dict[str, _Local], state: BaseState
    ) -> bytes | None:
        """The remote version's bytes when this machine already holds that content."""
        item = local.get(note_id)
        if item is not None and item.stored.note.content_hash == remote.hash:
            try:
                return item.data
            except OHarnessError:
                return None
        entry = state.notes.get(note_id)
        if entry is not None and entry.hash == remote.hash:
            copy = self.base.read_copy(note_id, entry)
            return copy[0] if copy else None
        return None

    def _remote_bytes(
        self,
        action: Action,
        bodies: dict[str, str],
        local: dict[str, _Local],
        state: BaseState,
    ) -> bytes | None:
        remote = action.remote
        if remote is None or remote.deleted:
            return None
        text = bodies.get(remote.rev)
        if text is not None:
            return text.encode("utf-8")
        return self._known_text(action.id, remote, local, state)

    # ---- applying ----------------------------------------------------------------------

    def _apply(
        self,
        action: Action,
        state: BaseState,
        local: dict[str, _Local],
        bodies: dict[str, str],
        quotas: Quotas,
        result: PassResult,
    ) -> tuple[Change, bytes | None] | None:
        kind, note_id = action.kind, action.id
        item = local.get(note_id)
        if kind is Kind.UPLOAD:
            assert item is not None
            change = Change("put", note_id, action.base_rev, item.data.decode("utf-8"))
            return change, item.data
        if kind is Kind.UPLOAD_DELETE:
            return Change("delete", note_id, action.base_rev), None
        if kind is Kind.CLEAR_BASE:
            state.notes.pop(note_id, None)
            return None
        if kind is Kind.ADVANCE_BASE:
            assert item is not None and action.remote is not None
            self.base.write_copy(note_id, action.remote.rev, item.data)
            state.notes[note_id] = BaseNote(action.remote.rev, item.stored.note.content_hash)
            return None
        if kind is Kind.DELETE_LOCAL:
            assert item is not None
            self._backup(item, "pull-delete")
            self.store.delete(note_id, expect_revision=item.stored.revision)
            state.notes.pop(note_id, None)
            result.removed += 1
            result.deleted_here.append(note_id)
            result.changed_anything = True
            return None
        data = self._remote_bytes(action, bodies, local, state)
        if kind is Kind.DOWNLOAD:
            if data is None:
                raise SyncError(f"the body of {note_id} did not arrive", code="incomplete")
            self._download(action, item, data, state, result)
            return None
        if kind is Kind.MERGE:
            return self._merge(action, item, data, state, quotas, result)
        self._record_conflict(action, item, data, state, result)
        return None

    def _backup(self, item: _Local, reason: str) -> None:
        self.backups.write(
            item.data,
            note_id=item.stored.id,
            reason=reason,
            scope_dir=self.store.directory.absolute(),
            scope_key=self.scope_key,
            content_hash=item.stored.note.content_hash,
        )

    def _download(
        self,
        action: Action,
        item: _Local | None,
        data: bytes,
        state: BaseState,
        result: PassResult,
    ) -> None:
        assert action.remote is not None
        note = parse_note_bytes(data)
        if item is not None:
            self._backup(item, "pull-update")
        rev = action.remote.rev
        self.store.save_bytes(
            action.id,
            data,
            create=item is None,
            expect_revision=item.stored.revision if item is not None else None,
            on_durable=lambda: self.base.mark_landed(action.id, rev),
        )
        self.base.write_copy(action.id, action.remote.rev, data)
        state.notes[action.id] = BaseNote(action.remote.rev, note.content_hash)
        result.pulled.append(action.id)
        result.changed_anything = True
        if item is None:
            result.added += 1
        else:
            result.modified += 1

    def _merge(
        self,
        action: Action,
        item: _Local | None,
        data: bytes | None,
        state: BaseState,
        quotas: Quotas,
        result: PassResult,
    ) -> tuple[Change, bytes | None] | None:
        assert item is not None and action.remote is not None
        entry = state.notes.get(action.id)
        copy = self.base.read_copy(action.id, entry) if entry is not None else None
        if data is None or copy is None:
            self._record_conflict(action, item, data, state, result)
            return None
        merged = merge_notes(
            copy[1],
            item.stored.note,
            parse_note_bytes(data),
            now=self.clock(),
            max_body_bytes=quotas.max_body_bytes,
        )
        if merged.note is None:
            self._record_conflict(action, item, data, state, result, reason="merge-conflict")
            return None
        cloud = parse_note_bytes(data)
        self._backup(item, "sync-merge")
        self.backups.write(
            data,
            note_id=action.id,
            reason="sync-merge",
            scope_dir=self.store.directory.absolute(),
            scope_key=self.scope_key,
            content_hash=cloud.content_hash,
        )
        merged_bytes = serialise_note_bytes(merged.note)
        self.store.save_bytes(
            action.id, merged_bytes, create=False, expect_revision=item.stored.revision
        )
        result.merged.append(action.id)
        result.changed_anything = True
        change = Change("put", action.id, action.remote.rev, merged_bytes.decode("utf-8"))
        return change, merged_bytes

    def _record_conflict(
        self,
        action: Action,
        item: _Local | None,
        data: bytes | None,
        state: BaseState,
        result: PassResult,
        *,
        reason: str | None = None,
    ) -> None:
        entry = state.notes.get(action.id)
        copy = self.base.read_copy(action.id, entry) if entry is not None else None
        remote = action.remote
        cloud_note: Note | None = parse_note_bytes(data) if data is not None else None
        self.conflicts.put(
            ConflictRecord(
                id=action.id,
                reason=reason or action.reason or "conflict",
                created_at=self.clock(),
                base=copy[0].decode("utf-8") if copy else None,
                local=item.data.decode("utf-8") if item else None,
                cloud=data.decode("utf-8") if data is not None else None,
                cloud_rev=remote.rev if remote is not None and not remote.deleted else None,
                cloud_hash=cloud_note.content_hash if cloud_note else None,
            )
        )
        result.changed_anything = True
