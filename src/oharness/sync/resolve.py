"""Resolving a conflict (spec 07.3): keep this machine's, take the cloud's, keep both, or a
text merged by hand.

A resolution only changes the local file and the base, under the scope's sync lock; the next
sync pass then uploads what the person chose with ordinary compare-and-swap (so a cloud that
changed again in the meantime is a new merge or conflict, never overwritten blindly). Whatever
is set aside is backed up first: the cloud's version when this machine's is kept
(``conflict-discard``), this machine's when the cloud's is taken (``conflict-take-cloud``),
both for a merge by hand. A text merged by hand is checked like ``remember`` checks a note
(:func:`check_like_remember`): summary, type, tags, body size, no credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import filelock

from oharness.errors import NoteFormatError, StorageError, ValidationError
from oharness.fsio import PRIVATE_FILE_MODE, make_directory
from oharness.notes.backups import BackupStore
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.ids import (
    check_type,
    clean_body,
    clean_summary,
    clean_tags,
    generate_id,
    random_hex,
)
from oharness.notes.secrets import check_no_secrets
from oharness.notes.store import NoteStore
from oharness.sync.ancestor import AncestorStore, BaseNote, BaseState
from oharness.sync.conflicts import ConflictBook, ConflictRecord
from oharness.types import Clock, HexSource

Keep = Literal["local", "cloud", "both"]
#: ``memory.maxNoteBytes``'s default (the resolver is told the configured one).
DEFAULT_MAX_NOTE_BYTES = 131072


def check_like_remember(note: Note, max_note_bytes: int) -> Note:
    """``note`` with its fields checked and cleaned as ``remember`` does (refusals name the
    field); raises :class:`ValidationError` or :class:`SecretError`, changing nothing."""
    summary, tags = clean_summary(note.summary), clean_tags(note.tags)
    body = clean_body(note.body, max_note_bytes)
    check_no_secrets({"summary": summary, "tags": "\n".join(tags), "body": body})
    return note.with_changes(summary=summary, tags=tags, body=body, type=check_type(note.type))


@dataclass(frozen=True)
class Resolution:
    """What a resolution did."""

    id: str
    keep: str
    new_id: str | None = None
    backups: tuple[str, ...] = ()


class ConflictResolver:
    """Resolves the conflicts of one scope."""

    def __init__(
        self,
        *,
        store: NoteStore,
        base: AncestorStore,
        backups: BackupStore,
        scope_key: str,
        clock: Clock,
        hex_source: HexSource = random_hex,
        lock_timeout: float = 30.0,
        max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES,
    ) -> None:
        self.store = store
        self.base = base
        self.book = ConflictBook(base.conflicts)
        self.backups = backups
        self.scope_key = scope_key
        self.clock = clock
        self.hex_source = hex_source
        self.lock_timeout = lock_timeout
        self.max_note_bytes = max_note_bytes

    def resolve(
        self, note_id: str, keep: Keep | None = None, text: str | None = None
    ) -> Resolution:
        """Resolve ``note_id`` by ``keep`` or with a hand-merged ``text`` (exactly one)."""
        if (keep is None) == (text is None):
            raise ValidationError("say how to resolve: --keep local|cloud|both, or --text-file F")
        record = self.book.get(note_id)
        make_directory(self.base.folder)
        try:
            with filelock.FileLock(
                self.base.lock_path, timeout=self.lock_timeout, mode=PRIVATE_FILE_MODE
            ):
                state = self.base.load()
                if text is not None:
                    resolution = self._by_hand(record, state, text)
                elif keep == "local":
                    resolution = self._keep_local(record, state)
                elif keep == "cloud":
                    resolution = self._take_cloud(record, state)
                else:
                    resolution = self._keep_both(record, state)
                self.base.save(state)
                self.book.remove(note_id)
                return resolution
        except filelock.Timeout as exc:
            raise StorageError(
                "a sync pass over this scope is running; try again in a moment"
            ) from exc

    # ---- helpers -------------------------------------------------------------------------

    def _backup(self, data: bytes, note_id: str, reason: str) -> str:
        note = parse_note_bytes(data)
        return self.backups.write(
            data,
            note_id=note_id,
            reason=reason,
            scope_dir=self.store.directory.absolute(),
            scope_key=self.scope_key,
            content_hash=note.content_hash,
        ).backup_id

    def _local_bytes(self, note_id: str) -> bytes | None:
        stored = self.store.get(note_id)
        return self.store.read_bytes(note_id) if stored is not None else None

    def _point_base_at_cloud(self, record: ConflictRecord, state: BaseState) -> None:
        """Base = the cloud version: the next pass uploads this machine's file over it."""
        if record.cloud is None or record.cloud_rev is None or record.cloud_hash is None:
            state.notes.pop(record.id, None)  # nothing live in the cloud: upload as new
            return
        self.base.write_copy(record.id, record.cloud_rev, record.cloud.encode("utf-8"))
        state.notes[record.id] = BaseNote(record.cloud_rev, record.cloud_hash)

    # ---- the four resolutions ------------------------------------------------------------

    def _keep_local(self, record: ConflictRecord, state: BaseState) -> Resolution:
        saved = []
        if record.cloud is not None:
            saved.append(self._backup(record.cloud.encode("utf-8"), record.id, "conflict-discard"))
        self._point_base_at_cloud(record, state)
        return Resolution(record.id, "local", backups=tuple(saved))

    def _take_cloud(self, record: ConflictRecord, state: BaseState) -> Resolution:
        saved = []
        local = self._local_bytes(record.id)
        if local is not None:
            saved.append(self._backup(local, record.id, "conflict-take-cloud"))
        if record.cloud is None:
            if local is not None:
                self.store.delete(record.id)
            state.notes.pop(record.id, None)
        else:
            cloud = record.cloud.encode("utf-8")
            self.store.save_bytes(record.id, cloud, create=local is None)
            self._point_base_at_cloud(record, state)
        return Resolution(record.id, "cloud", backups=tuple(saved))

    def _keep_both(self, record: ConflictRecord, state: BaseState) -> Resolution:
        if record.cloud is None:
            return self._keep_local(record, state)
        cloud = parse_note_bytes(record.cloud.encode("utf-8"))
        new_id = self._free_id(cloud.summary)
        now = self.clock()
        self.store.save(cloud.with_changes(id=new_id, updated_at=now), create=True)
        self._point_base_at_cloud(record, state)
        return Resolution(record.id, "both", new_id=new_id)

    def _free_id(self, summary: str) -> str:
        for _ in range(32):
            candidate = generate_id(summary, self.hex_source)
            if self.store.get_folded(candidate) is None:
                return candidate
        raise ValidationError("no free id for the cloud copy; reword its summary and retry")

    def _by_hand(self, record: ConflictRecord, state: BaseState, text: str) -> Resolution:
        local = self._local_bytes(record.id)
        note = check_like_remember(self._hand_note(record, local, text), self.max_note_bytes)
        saved = []
        if local is not None:
            saved.append(self._backup(local, record.id, "conflict-discard"))
        if record.cloud is not None:
            saved.append(self._backup(record.cloud.encode("utf-8"), record.id, "conflict-discard"))
        self.store.save_bytes(record.id, serialise_note_bytes(note), create=local is None)
        self._point_base_at_cloud(record, state)
        return Resolution(record.id, "text", backups=tuple(saved))

    def _hand_note(self, record: ConflictRecord, local: bytes | None, text: str) -> Note:
        """A whole note file, or just a body merged into this machine's note. What a note file
        leaves out is the note's: its id and its creation time (both versions share them)."""
        now = self.clock()
        template = local or (record.cloud.encode("utf-8") if record.cloud else None)
        try:
            note = parse_note_bytes(text.encode("utf-8"), default_time=-1, default_id=record.id)
        except NoteFormatError as exc:
            if exc.details.get("reason") != "no_frontmatter":
                raise ValidationError(
                    f"the merged text starts like a note file but {exc.message}: fix it, or "
                    "give only the body"
                ) from None
            if template is None:
                raise ValidationError(
                    "the merged text is not a note file and there is no version to take the "
                    "summary from; give a whole note file (frontmatter and body)"
                ) from None
            body = text.replace("\r\n", "\n")
            if not body.strip():
                raise ValidationError("the merged text is empty") from None
            return parse_note_bytes(template).with_changes(body=body, updated_at=now)
        if note.id != record.id:
            raise ValidationError(
                f"the merged note's id is {note.id!r}, not {record.id!r}: keep the id"
            )
        created = note.created_at
        if created < 0:
            created = parse_note_bytes(template).created_at if template else now
        return note.with_changes(created_at=created, updated_at=now)
