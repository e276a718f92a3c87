"""The apply stage of a sync round: write the plan's downloads, deletions and merges to disk.

Every download is announced in the base before its file is written (a crash between the two
is recognised by the next pass); every replaced or removed local file is backed up first;
merges and conflicts go through the three-way note merge and the conflict book. Only then is
the base saved, recording what is on disk. Uploads are collected for the commit stage.
"""

from __future__ import annotations

from collections.abc import Callable

from oharness.errors import OHarnessError, SyncError
from oharness.merge.note import merge_notes
from oharness.notes.format import Note, file_revision, parse_note_bytes, serialise_note_bytes
from oharness.sync.ancestor import BaseNote, PendingNote
from oharness.sync.conflicts import ConflictRecord
from oharness.sync.fetch import remote_bytes
from oharness.sync.plan import Action, Kind
from oharness.sync.position import release_held
from oharness.sync.protocol import Change
from oharness.sync.sync_round import LocalNote, ScopeParts, SyncRound

Upload = tuple[Change, bytes | None]


def apply(parts: ScopeParts, rnd: SyncRound) -> None:
    """Carry out the plan's local side; uploads wait in ``rnd.uploads`` for the commit."""
    state, result = rnd.state, rnd.result
    # The fetch stage swept the folder; every write below checks its file (expect_revision).
    with parts.store.batch(full=False):
        _announce_downloads(parts, rnd)
        for action in rnd.actions:
            try:
                upload = _apply_action(parts, rnd, action)
            except OHarnessError as exc:
                result.errors.append({"id": action.id, "code": exc.code, "message": exc.message})
                rnd.complete = False
                continue
            if upload is not None:
                rnd.uploads.append(upload)
        state.pending = {k: v for k, v in state.pending.items() if v.kind != "download"}
    release_held(state, rnd.blocked, {error["id"] for error in result.errors})
    parts.base.save(state)  # everything pulled is on disk: record it
    parts.base.clear_landed()


def _announce_downloads(parts: ScopeParts, rnd: SyncRound) -> None:
    """Record every download before its file is written (one save for the batch)."""
    state = rnd.state
    for action in rnd.actions:
        if action.kind is not Kind.DOWNLOAD or action.remote is None:
            continue
        data = remote_bytes(parts, rnd, action)
        if data is None:
            continue
        note = parse_note_bytes(data)
        parts.base.write_copy(action.id, action.remote.rev, data)
        state.pending[action.id] = PendingNote(action.remote.rev, note.content_hash, "download")
    if state.pending:
        parts.base.save(state)


def _apply_action(parts: ScopeParts, rnd: SyncRound, action: Action) -> Upload | None:
    kind, note_id = action.kind, action.id
    item = rnd.local.get(note_id)
    state, result = rnd.state, rnd.result
    if kind is Kind.UPLOAD:
        assert item is not None
        return Change("put", note_id, action.base_rev, item.data.decode("utf-8")), item.data
    if kind is Kind.UPLOAD_DELETE:
        return Change("delete", note_id, action.base_rev), None
    if kind is Kind.CLEAR_BASE:
        state.notes.pop(note_id, None)
        return None
    if kind is Kind.ADVANCE_BASE:
        assert item is not None and action.remote is not None
        parts.base.write_copy(note_id, action.remote.rev, item.data)
        state.notes[note_id] = BaseNote(action.remote.rev, item.hash)
        return None
    if kind is Kind.DELETE_LOCAL:
        assert item is not None
        _backup(parts, item, "pull-delete")
        parts.store.delete(
            note_id,
            expect_revision=item.stored.revision,
            on_displaced=_keep(parts, note_id, "pull-delete"),
        )
        state.notes.pop(note_id, None)
        result.removed += 1
        result.deleted_here.append(note_id)
        result.changed_anything = True
        return None
    data = remote_bytes(parts, rnd, action)
    if kind is Kind.DOWNLOAD:
        if data is None:
            raise SyncError(f"the body of {note_id} did not arrive", code="incomplete")
        _download(parts, rnd, action, item, data)
        return None
    if kind is Kind.MERGE:
        return _merge(parts, rnd, action, item, data)
    _record_conflict(parts, rnd, action, item, data)
    return None


def _backup(parts: ScopeParts, item: LocalNote, reason: str) -> None:
    parts.backup(item.data, item.stored.id, reason, item.hash)


def _keep(parts: ScopeParts, note_id: str, reason: str) -> Callable[[bytes], None]:
    """Back up a save that raced a write of this pass and could not stay in place (two
    saves at once; a single one is always put back in place)."""

    def keep(data: bytes) -> None:
        try:
            content_hash = parse_note_bytes(data).content_hash
        except OHarnessError:
            content_hash = file_revision(data)
        parts.backup(data, note_id, reason, content_hash)

    return keep


def _download(
    parts: ScopeParts, rnd: SyncRound, action: Action, item: LocalNote | None, data: bytes
) -> None:
    assert action.remote is not None
    note = parse_note_bytes(data)
    if item is not None:
        _backup(parts, item, "pull-update")
    rev = action.remote.rev
    parts.store.save_bytes(
        action.id,
        data,
        create=item is None,
        expect_revision=item.stored.revision if item is not None else None,
        expect_absent=item is None,
        on_durable=lambda: parts.base.mark_landed(action.id, rev),
        on_displaced=_keep(parts, action.id, "pull-update"),
    )
    parts.base.write_copy(action.id, rev, data)
    rnd.state.notes[action.id] = BaseNote(rev, note.content_hash)
    result = rnd.result
    result.pulled.append(action.id)
    result.changed_anything = True
    if item is None:
        result.added += 1
    else:
        result.modified += 1


def _merge(
    parts: ScopeParts, rnd: SyncRound, action: Action, item: LocalNote | None, data: bytes | None
) -> Upload | None:
    assert item is not None and action.remote is not None
    entry = rnd.state.notes.get(action.id)
    copy = parts.base.read_copy(action.id, entry) if entry is not None else None
    if data is None or copy is None:
        _record_conflict(parts, rnd, action, item, data)
        return None
    cloud = parse_note_bytes(data)
    limit = rnd.quotas.max_body_bytes
    merged = merge_notes(copy[1], item.stored.note, cloud, now=parts.clock(), max_body_bytes=limit)
    if merged.note is None:
        _record_conflict(parts, rnd, action, item, data, reason="merge-conflict")
        return None
    _backup(parts, item, "sync-merge")
    parts.backup(data, action.id, "sync-merge", cloud.content_hash)
    merged_bytes = serialise_note_bytes(merged.note)
    parts.store.save_bytes(
        action.id,
        merged_bytes,
        create=False,
        expect_revision=item.stored.revision,
        on_displaced=_keep(parts, action.id, "sync-merge"),
    )
    rnd.result.merged.append(action.id)
    rnd.result.changed_anything = True
    return Change("put", action.id, action.remote.rev, merged_bytes.decode("utf-8")), merged_bytes


def _record_conflict(
    parts: ScopeParts,
    rnd: SyncRound,
    action: Action,
    item: LocalNote | None,
    data: bytes | None,
    *,
    reason: str | None = None,
) -> None:
    entry = rnd.state.notes.get(action.id)
    copy = parts.base.read_copy(action.id, entry) if entry is not None else None
    remote = action.remote
    cloud_note: Note | None = parse_note_bytes(data) if data is not None else None
    parts.conflicts.put(
        ConflictRecord(
            id=action.id,
            reason=reason or action.reason or "conflict",
            created_at=parts.clock(),
            base=copy[0].decode("utf-8") if copy else None,
            local=item.data.decode("utf-8") if item else None,
            cloud=data.decode("utf-8") if data is not None else None,
            cloud_rev=remote.rev if remote is not None and not remote.deleted else None,
            cloud_hash=cloud_note.content_hash if cloud_note else None,
        )
    )
    rnd.result.changed_anything = True
