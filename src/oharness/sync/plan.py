"""Reconciliation planning, pure (spec 07.2): local files, the base and the remote listing in,
one action per note out. No I/O here; :mod:`oharness.sync.scope_sync` carries the plan out.

Per note, with L the local file, B the base (the note as last synced) and R the remote entry:

| L vs B  | R vs B                  | action                                        |
|---------|-------------------------|-----------------------------------------------|
| same    | same                    | nothing                                       |
| changed | same                    | upload (baseRev = base rev)                   |
| deleted | same                    | upload a delete                               |
| same    | changed                 | download (local backed up: pull-update)       |
| same    | deleted (tombstone)     | delete locally (backed up: pull-delete)       |
| changed | deleted                 | re-create remotely (baseRev null)             |
| deleted | changed                 | download                                      |
| changed | changed, same hash      | advance the base                              |
| changed | changed                 | three-way merge, else conflict                |
| new     | new, same hash          | record in the base                            |
| new     | new, other content      | conflict                                      |
| deleted | deleted                 | clear the base entry                          |
| absent  | new                     | download                                      |
| new     | absent                  | upload (baseRev null)                         |
| same    | missing from full list  | delete locally (backed up), clear base        |
| changed | missing from full list  | conflict                                      |
| deleted | missing from full list  | clear the base entry                          |

A base entry whose copy is missing or unreadable, with a change on either side, is a conflict.
Unsyncable files (present but unparseable, or not loaded because of ``maxNotes``) are never
read as deletions; notes with an open conflict are left alone until it is resolved.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What to do with one note."""

    UPLOAD = "upload"  # put, base_rev = base rev or None
    UPLOAD_DELETE = "upload-delete"
    DOWNLOAD = "download"
    DELETE_LOCAL = "delete-local"
    ADVANCE_BASE = "advance-base"  # local equals remote: record it
    CLEAR_BASE = "clear-base"
    MERGE = "merge"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class LocalState:
    """A syncable local note: its content hash."""

    hash: str


@dataclass(frozen=True)
class BaseView:
    """The note as last synced: remote rev and hash, and whether its copy is readable."""

    rev: str
    hash: str
    has_copy: bool = True


@dataclass(frozen=True)
class RemoteState:
    """A remote entry: live (rev, hash) or a tombstone (rev, ``deleted``)."""

    rev: str
    hash: str | None = None
    deleted: bool = False


@dataclass(frozen=True)
class Action:
    """One planned step; ``remote`` is the entry it acts on (when there is one)."""

    kind: Kind
    id: str
    base_rev: str | None = None
    remote: RemoteState | None = None
    reason: str = ""


@dataclass(frozen=True)
class RemoteView:
    """What the snapshot said: entries by id and whether the listing is full.

    In a delta (``full`` false) an id that is not listed is unchanged since the base.
    """

    entries: Mapping[str, RemoteState]
    full: bool


def plan_sync(
    local: Mapping[str, LocalState],
    base: Mapping[str, BaseView],
    remote: RemoteView,
    *,
    unsyncable: Set[str] = frozenset(),
    conflicted: Set[str] = frozenset(),
) -> list[Action]:
    """The actions that reconcile every note (sorted by id; ``nothing`` rows are left out)."""
    ids = set(local) | set(base) | set(remote.entries)
    actions: list[Action] = []
    for note_id in sorted(ids):
        if note_id in unsyncable or note_id in conflicted:
            continue
        action = plan_note(note_id, local.get(note_id), base.get(note_id), remote)
        if action is not None:
            actions.append(action)
    return actions


def _remote_for(note_id: str, base: BaseView | None, remote: RemoteView) -> RemoteState | None:
    entry = remote.entries.get(note_id)
    if entry is not None:
        return entry
    if not remote.full and base is not None:
        return RemoteState(base.rev, base.hash)  # a delta leaves unchanged notes out
    return None


def plan_note(
    note_id: str, local: LocalState | None, base: BaseView | None, remote: RemoteView
) -> Action | None:
    """The action for one note (``None``: nothing to do)."""
    entry = _remote_for(note_id, base, remote)
    if base is None:
        return _plan_without_base(note_id, local, entry)
    remote_same = entry is not None and not entry.deleted and entry.rev == base.rev
    local_same = local is not None and local.hash == base.hash
    if not base.has_copy and not (local_same and remote_same):
        if local is None and (entry is None or entry.deleted):
            return Action(Kind.CLEAR_BASE, note_id)
        return Action(Kind.CONFLICT, note_id, remote=entry, reason="base-copy-missing")
    if entry is None:  # missing from a full listing: the tombstone expired
        if local is None:
            return Action(Kind.CLEAR_BASE, note_id)
        if local_same:
            return Action(Kind.DELETE_LOCAL, note_id, reason="pull-delete")
        return Action(Kind.CONFLICT, note_id, reason="changed-here-expired-there")
    if entry.deleted:
        if local is None:
            return Action(Kind.CLEAR_BASE, note_id)
        if local_same:
            return Action(Kind.DELETE_LOCAL, note_id, remote=entry, reason="pull-delete")
        return Action(Kind.UPLOAD, note_id, base_rev=None, remote=entry, reason="recreate")
    if remote_same:
        if local is None:
            return Action(Kind.UPLOAD_DELETE, note_id, base_rev=base.rev)
        if local_same:
            return None
        return Action(Kind.UPLOAD, note_id, base_rev=base.rev)
    # The remote note changed since the base.
    if local is None:
        return Action(Kind.DOWNLOAD, note_id, remote=entry, reason="edited-there-deleted-here")
    if local_same:
        return Action(Kind.DOWNLOAD, note_id, remote=entry, reason="pull-update")
    if local.hash == entry.hash:
        return Action(Kind.ADVANCE_BASE, note_id, remote=entry)
    return Action(Kind.MERGE, note_id, remote=entry)


def _plan_without_base(
    note_id: str, local: LocalState | None, entry: RemoteState | None
) -> Action | None:
    live = entry is not None and not entry.deleted
    if local is None:
        return Action(Kind.DOWNLOAD, note_id, remote=entry, reason="new-there") if live else None
    if not live:
        return Action(Kind.UPLOAD, note_id, base_rev=None)
    assert entry is not None
    if entry.hash == local.hash:
        return Action(Kind.ADVANCE_BASE, note_id, remote=entry)
    return Action(Kind.CONFLICT, note_id, remote=entry, reason="new-on-both-sides")
