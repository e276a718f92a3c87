"""The fetch stage of a sync round: read the local notes, list the server, plan, fetch bodies.

Nothing here writes a note: the local notes are read fresh (unparseable and unloaded files are
unsyncable, never deletions), the snapshot is a delta since the version last seen or a full
listing with ``have`` hashes, versions an earlier pass wrote ahead join the base when they
landed, and the plan's missing bodies are asked for in follow-up snapshots.
"""

from __future__ import annotations

import contextlib
import logging

from oharness.errors import OHarnessError
from oharness.sync.ancestor import BaseNote, BaseState
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
    keep_restored,
    restored_older,
    stale_conflict_revs,
    storage_was_reset,
)
from oharness.sync.protocol import SnapshotRequest, SnapshotResponse
from oharness.sync.sync_round import LocalNote, ScopeParts, SyncRound

log = logging.getLogger(__name__)
_PENDING_ROUNDS = 64


def fetch(parts: ScopeParts, rnd: SyncRound) -> None:
    """Fill ``rnd`` with the local notes, the server's listing, the plan and its bodies."""
    parts.store.refresh(full=True)
    _read_local(parts, rnd)
    if rnd.folder_replaced:
        # A folder made anew (cloned again where one was deleted) never held the notes it
        # lacks: a full listing brings them back instead of their deletion going up.
        for note_id in set(rnd.state.notes) - rnd.local.keys() - rnd.blocked:
            del rnd.state.notes[note_id]
        rnd.state.version = None
    snapshot = _snapshot(parts, rnd.state, rnd.local)
    # Encryption turned on or off since the last pass: the notes are in the account's other
    # copy, whose history is not the base's; it is listed in full as after a reset.
    moved = rnd.state.sealed not in (None, parts.client.sealed)
    if storage_was_reset(rnd.state, snapshot):
        if moved:
            log.info("the notes moved with end-to-end encryption: re-syncing as a first sync")
        else:
            log.warning("the sync storage was reset or restored: re-syncing as a first sync")
        forget_remote(rnd.state)
        snapshot = _snapshot(parts, rnd.state, rnd.local)
    if rnd.state.restoring:
        # This pass, or one cut short before it moved the position, found a reset: the
        # listing is full, and the base keeps only what the server holds.
        rnd.result.reset = not moved
        keep_restored(rnd.state, _remote_view(snapshot))
    rnd.snapshot = snapshot
    rnd.result.plan = snapshot.plan
    rnd.bodies = dict(snapshot.objects)
    view = _remote_view(snapshot)
    result = rnd.result
    rnd.blocked, result.problems = release_visible_deletions(
        rnd.blocked, result.problems, view.entries
    )
    result.unsyncable = [problem.file for problem in result.problems]
    remote = hold_blocked(rnd.state, view, rnd.blocked)
    _promote_pending(parts, rnd.state, rnd.local, remote)
    _plan(parts, rnd, remote)


def _plan(parts: ScopeParts, rnd: SyncRound, remote: RemoteView) -> None:
    state = rnd.state
    plan_base = {
        note_id: BaseView(entry.rev, entry.hash, parts.base.has_copy(note_id, entry))
        for note_id, entry in state.notes.items()
    }
    conflicted = parts.conflicts.ids()
    rnd.actions = plan_sync(
        {note_id: LocalState(item.hash) for note_id, item in rnd.local.items()},
        plan_base,
        remote,
        unsyncable=rnd.blocked,
        conflicted=conflicted,
    )
    if rnd.result.reset:
        rnd.actions = restored_older(state, rnd.actions)
    _repair_copies(parts, state, rnd.local)
    stale_records = stale_conflict_revs(parts.conflicts, conflicted, remote)
    needed = _needed_revs(parts, rnd) | stale_records
    rnd.complete = _fetch_bodies(parts, needed, rnd.bodies, rnd.listed.version)
    follow_cloud(parts.conflicts, conflicted, remote, rnd.bodies)


def _read_local(parts: ScopeParts, rnd: SyncRound) -> None:
    """Syncable notes, and the ids of files that cannot sync now (listed in the result)."""
    store = parts.store
    if store.remove_stale_temp_files():  # the same cleanup as every note write
        store.refresh(full=True)
    syncable, problems = classify_local(store, rnd.state.notes, parts.protocol, parts.base)
    rnd.result.problems = problems
    rnd.result.unsyncable = [problem.file for problem in problems]
    rnd.blocked = {note_id for problem in problems for note_id in problem.ids()}
    rnd.local = {note_id: LocalNote(stored) for note_id, stored in syncable.items()}


def _snapshot(parts: ScopeParts, state: BaseState, local: dict[str, LocalNote]) -> SnapshotResponse:
    # Another protocol than the last pass's lists other notes (typed ones): start over.
    # Version 0 is an empty storage, which has no generation or commit id to check: with
    # notes in the base (uploaded since, by commits it could not claim), a reset back to
    # empty would look "unchanged", so ask for the (tiny) full listing.
    same_protocol = state.protocol in (None, parts.protocol)
    stale_empty = state.version == 0 and bool(state.notes)
    since = state.version if same_protocol and not stale_empty else None
    have: frozenset[str] = frozenset()
    if since is None:
        have = frozenset(item.hash for item in local.values()) | {
            entry.hash for entry in state.notes.values()
        }
    parts.check_cancelled()
    return parts.client.snapshot(
        SnapshotRequest(
            parts.scope,
            protocol=parts.protocol,
            since=since,
            have=have,
            generation=state.generation,
            since_commit=state.commit if since is not None else None,
        )
    )


def _remote_view(snapshot: SnapshotResponse) -> RemoteView:
    if snapshot.unchanged:
        return RemoteView({}, full=False)
    entries: dict[str, RemoteState] = {
        tomb.id: RemoteState(tomb.rev, deleted=True) for tomb in snapshot.tombstones
    }
    entries.update({note.id: RemoteState(note.rev, note.hash) for note in snapshot.notes})
    return RemoteView(entries, full=snapshot.full)


def _promote_pending(
    parts: ScopeParts, state: BaseState, local: dict[str, LocalNote], remote: RemoteView
) -> None:
    """Versions a previous pass sent or wrote without recording: join the base if landed."""
    journal = parts.base.landed() if state.pending else set()
    for note_id, pending in state.pending.items():
        item = local.get(note_id)
        if pending.kind == "download":
            landed = (note_id, pending.rev) in journal or (
                item is not None and item.hash == pending.hash
            )
        else:
            entry = remote.entries.get(note_id)
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
                    and item.hash == pending.hash
                )
            )
        if landed:
            state.notes[note_id] = BaseNote(pending.rev, pending.hash)
    state.pending = {}


def _repair_copies(parts: ScopeParts, state: BaseState, local: dict[str, LocalNote]) -> None:
    """A missing copy of a note that is the same on this machine is rewritten from it."""
    for note_id, entry in state.notes.items():
        item = local.get(note_id)
        if item is not None and item.hash == entry.hash and not parts.base.has_copy(note_id, entry):
            with contextlib.suppress(OHarnessError):  # changed meanwhile: next pass
                parts.base.write_copy(note_id, entry.rev, item.data)


def _needed_revs(parts: ScopeParts, rnd: SyncRound) -> set[str]:
    """Revisions whose bodies the plan needs and neither the snapshot nor the disk has."""
    return {
        action.remote.rev
        for action in rnd.actions
        if action.kind in (Kind.DOWNLOAD, Kind.MERGE, Kind.CONFLICT)
        and action.remote is not None
        and not action.remote.deleted
        and action.remote.rev not in rnd.bodies
        and known_text(parts, rnd, action.id, action.remote) is None
    }


def _fetch_bodies(
    parts: ScopeParts, needed: set[str], bodies: dict[str, str], version: int
) -> bool:
    """Ask for the bodies the snapshot did not carry; True when all arrived.

    The follow-up names the version just listed, so the server answers ``unchanged`` with
    only the wanted bodies instead of listing everything again.
    """
    for _ in range(_PENDING_ROUNDS):
        wanted = sorted(needed - bodies.keys())
        if not wanted:
            return True
        if parts.progress is not None:
            parts.progress("download", len(needed) - len(wanted), len(needed))
        parts.check_cancelled()
        reply = parts.client.snapshot(
            SnapshotRequest(parts.scope, protocol=parts.protocol, since=version, want=tuple(wanted))
        )
        if not reply.objects:
            return False
        bodies.update(reply.objects)
    return not (needed - bodies.keys())


def known_text(
    parts: ScopeParts, rnd: SyncRound, note_id: str, remote: RemoteState
) -> bytes | None:
    """The remote version's bytes when this machine already holds that content."""
    item = rnd.local.get(note_id)
    if item is not None and item.hash == remote.hash:
        try:
            return item.data
        except OHarnessError:
            return None
    entry = rnd.state.notes.get(note_id)
    if entry is not None and entry.hash == remote.hash:
        copy = parts.base.read_copy(note_id, entry)
        return copy[0] if copy else None
    return None


def remote_bytes(parts: ScopeParts, rnd: SyncRound, action: Action) -> bytes | None:
    """The bytes of the remote version ``action`` takes (None when deleted or not here)."""
    remote = action.remote
    if remote is None or remote.deleted:
        return None
    text = rnd.bodies.get(remote.rev)
    if text is not None:
        return text.encode("utf-8")
    return known_text(parts, rnd, action.id, remote)
