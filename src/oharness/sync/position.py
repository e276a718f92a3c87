"""Where a scope's base stands against the server (spec 07.2): resets, held changes.

- **Reset or restore.** The base records the storage generation and the commit id at its
  version. A snapshot answered ``reset`` (another generation, a version below the base's, or
  another commit at the base's version), a version lower than the base's from a server that
  does not check commit ids, or another generation in any answer: the storage was reset or
  restored. The pass then forgets where the base stood on the server and lists it in full.
  Each note's last synced content stays the base where the server still holds the note, so a
  side that did not touch a note takes the other side's edit and edits on both sides merge;
  notes the server lacks lose their base entry and are uploaded (nothing is deleted locally).
  A server version equal to an earlier content of the note here is the restore bringing back
  an older version: this machine's newer one is uploaded over it (:func:`restored_older`).
  The base is marked ``restoring`` until a pass moves its position past the reset: a pass cut
  short meanwhile is finished by the next one, whose full listing is read the same way (a
  second reset in between never reads as deletions).
- **Held changes.** A note that cannot be synced now (unreadable, over ``maxNotes``, typed
  under protocol 1) is skipped by the plan while the base's version moves on. Its remote
  change is kept per note in ``held`` and handed to the plan once the note is readable again,
  so neither the remote edit nor a later local one is lost.
- **Conflicts that keep moving.** A conflicted note the cloud changes again: its record
  follows the cloud, so a resolution acts on the newest cloud version.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import replace

from oharness.notes.format import parse_note_bytes
from oharness.sync.ancestor import BaseState, HeldChange
from oharness.sync.conflicts import ConflictBook
from oharness.sync.plan import Action, Kind, RemoteState, RemoteView
from oharness.sync.protocol import SnapshotResponse


def storage_was_reset(state: BaseState, snapshot: SnapshotResponse) -> bool:
    """True when the snapshot shows the storage is not the history the base saw."""
    if state.version is None:
        return False
    if snapshot.reset:
        return True
    if snapshot.generation and state.generation and snapshot.generation != state.generation:
        return True
    return not snapshot.unchanged and snapshot.version < state.version


def forget_remote(state: BaseState) -> None:
    """Forget where the base stood on the server (its notes stay until the full listing), and
    mark the base ``restoring`` until a pass moves its position past the reset."""
    state.restoring = True
    state.held.clear()
    state.version = None
    state.commit = None
    state.generation = None


def keep_restored(state: BaseState, remote: RemoteView) -> None:
    """After a reset, the base keeps only the notes the server holds (the others are uploaded
    as new: a storage that lost a note must not read as its deletion). Only a full listing
    says what the server lacks."""
    if not remote.full:
        return
    for note_id in list(state.notes):
        entry = remote.entries.get(note_id)
        if entry is None or entry.deleted:
            del state.notes[note_id]


def restored_older(state: BaseState, actions: list[Action]) -> list[Action]:
    """In the pass after a restore: a download or merge whose server version is one this
    machine's base already moved past is the restore's older copy, not an edit made
    elsewhere; this machine's version is uploaded over it instead (deleted here: the delete)."""
    planned = []
    for action in actions:
        remote = action.remote
        if (
            action.reason not in ("pull-update", "edited-there-deleted-here")
            and action.kind is not Kind.MERGE
        ) or (
            remote is None
            or remote.hash is None
            or remote.hash not in state.earlier.get(action.id, ())
        ):
            planned.append(action)
        elif action.reason == "edited-there-deleted-here":
            planned.append(Action(Kind.UPLOAD_DELETE, action.id, base_rev=remote.rev))
        else:
            planned.append(
                Action(Kind.UPLOAD, action.id, base_rev=remote.rev, reason="restored-older")
            )
    return planned


def hold_blocked(state: BaseState, remote: RemoteView, blocked: Set[str]) -> RemoteView:
    """Keep the remote changes of blocked notes; hand held ones to notes readable again."""
    entries = dict(remote.entries)
    for note_id in blocked:
        entry = entries.get(note_id)
        if entry is None:
            continue
        base = state.notes.get(note_id)
        if base is not None and not entry.deleted and entry.rev == base.rev:
            state.held.pop(note_id, None)  # back where the base is: nothing to hold
        else:
            state.held[note_id] = HeldChange(entry.rev, entry.hash, entry.deleted)
    for note_id, held in state.held.items():
        if note_id not in blocked and note_id not in entries and not remote.full:
            entries[note_id] = RemoteState(held.rev, held.hash, held.deleted)
    return RemoteView(entries, remote.full)


def release_held(state: BaseState, blocked: Set[str], failed: Set[str]) -> None:
    """Held changes the plan just handled (the note was readable and nothing failed) go."""
    state.held = {
        note_id: held
        for note_id, held in state.held.items()
        if note_id in blocked or note_id in failed
    }


def _listed_changes(conflicted: Set[str], remote: RemoteView) -> dict[str, RemoteState]:
    return {note_id: remote.entries[note_id] for note_id in conflicted if note_id in remote.entries}


def stale_conflict_revs(book: ConflictBook, conflicted: Set[str], remote: RemoteView) -> set[str]:
    """Cloud revisions of conflicted notes newer than their records (bodies to fetch)."""
    revs = set()
    for note_id, entry in _listed_changes(conflicted, remote).items():
        if not entry.deleted and entry.rev != book.get(note_id).cloud_rev:
            revs.add(entry.rev)
    return revs


def follow_cloud(
    book: ConflictBook, conflicted: Set[str], remote: RemoteView, bodies: Mapping[str, str]
) -> None:
    """A conflicted note changed again in the cloud: its record follows the cloud."""
    for note_id, entry in _listed_changes(conflicted, remote).items():
        record = book.get(note_id)
        if entry.deleted:
            if record.cloud is None:
                continue
            cloud, rev, content_hash = None, None, None
        else:
            if entry.rev == record.cloud_rev or entry.rev not in bodies:
                continue
            cloud, rev = bodies[entry.rev], entry.rev
            content_hash = parse_note_bytes(cloud.encode("utf-8")).content_hash
        book.put(replace(record, cloud=cloud, cloud_rev=rev, cloud_hash=content_hash))
