"""The backups a person can restore from a workspace, and whether a restore needs a yes
(spec 02.5, 11).

:func:`backup_listing` lists the newest backups of *this workspace's* notes — taken from its
project folder or the user folder, or with no recorded origin (legacy backups, restored to the
scope their type belongs to) — newest first, each with when and why, the note's summary, where a
restore puts it, and how that version compares with the note there now. Backups taken from other
projects' folders are left out: they restore only in their own project.

:func:`restore_backup` restores one through :meth:`MemoryService.restore` (which backs up the
version it replaces, reason ``restore-replace``), refusing without ``confirmed`` when the note
there now is a newer, different version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final, Literal

from oharness.errors import ConflictError, NoteFormatError, StorageError
from oharness.memory.memory_service import MemoryService
from oharness.memory.results import RestoreResult
from oharness.notes.backups import BackupRecord
from oharness.notes.format import Note, parse_note_bytes
from oharness.types import Scope, default_scope_for

#: How many backups the Memory page lists (spec 11).
PAGE_LIMIT: Final = 50
Current = Literal["absent", "same", "older", "newer"]


@dataclass(frozen=True)
class BackupEntry:
    """One restorable backup and how it compares with the note it would replace."""

    record: BackupRecord
    scope: Scope | None
    note: Note | None
    current: Current | None
    current_updated_at: int | None = None

    @property
    def readable(self) -> bool:
        """False when the backup file is not a note (it is listed, not restorable here)."""
        return self.note is not None and self.scope is not None

    @property
    def replaces_newer(self) -> bool:
        """A restore would replace a different version changed no earlier than this one."""
        return self.current == "newer"


def _scope_dirs(service: MemoryService) -> dict[str, Scope]:
    found: dict[str, Scope] = {}
    for scope in service.available_scopes():
        found[os.path.realpath(service.store(scope).directory)] = scope
    return found


def _read(service: MemoryService, record: BackupRecord) -> Note | None:
    try:
        return parse_note_bytes(service.backups().read_bytes(record))
    except (NoteFormatError, StorageError):  # listed, marked unreadable
        return None


def _compare(service: MemoryService, scope: Scope, note: Note) -> tuple[Current, int | None]:
    current = service.store(scope).get(note.id)
    if current is None:
        return "absent", None
    now = current.note
    if now.content_hash == note.content_hash:
        return "same", now.updated_at
    return ("newer" if now.updated_at >= note.updated_at else "older"), now.updated_at


def backup_entry(service: MemoryService, record: BackupRecord) -> BackupEntry | None:
    """``record`` as an entry of this workspace (None: it belongs to another folder)."""
    dirs = _scope_dirs(service)
    scope: Scope | None = None
    if record.scope_dir is not None:
        scope = dirs.get(os.path.realpath(record.scope_dir))
        if scope is None:
            return None
    note = _read(service, record)
    if note is None:
        return BackupEntry(record, scope, None, None)
    if scope is None:
        scope = default_scope_for(note.type)
        if scope not in service.available_scopes():
            return BackupEntry(record, None, note, None)
    current, updated = _compare(service, scope, note)
    return BackupEntry(record, scope, note, current, updated)


def backup_listing(service: MemoryService, limit: int = PAGE_LIMIT) -> list[BackupEntry]:
    """The newest ``limit`` backups of this workspace's notes, newest first."""
    found: list[BackupEntry] = []
    for record in service.backups().recent(None):
        entry = backup_entry(service, record)
        if entry is not None:
            found.append(entry)
            if len(found) >= limit:
                break
    return found


def restore_backup(service: MemoryService, backup_id: str, *, confirmed: bool) -> RestoreResult:
    """Restore a backup; without ``confirmed``, refused when it would replace a newer version."""
    record = service.backups().get(backup_id)
    entry = backup_entry(service, record)
    if not confirmed and entry is not None and entry.replaces_newer:
        raise ConflictError(
            f"the note {record.note_id} was changed after this backup; restoring replaces that "
            "newer version (it is backed up first): confirm to restore",
            reason="replaces_newer",
            backupId=backup_id,
        )
    return service.restore(backup_id, entry.scope if entry is not None else None)
