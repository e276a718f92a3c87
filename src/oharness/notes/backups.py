"""Backups of notes before anything replaces or removes them (spec 02.5).

Layout, in the backup directory (``$OHARNESS_HOME/memory-backups/``)::

    <ms>-<id>-<reason>[-<n>].md     the note file's exact bytes
    <ms>-<id>-<reason>[-<n>].json   a sidecar: version, id, scopeDir, scopeKey, hash, reason, at

The file name (without suffix) is the backup id. Both files are written atomically, the note
first: a crash between the two leaves a bare ``.md``, which is listed like a legacy backup
(reason from its name when it has one, else ``unknown``) and stays restorable.
Retention: backups younger than 90 days and the newest 500 are always kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from oharness.errors import NoteFormatError, NotFoundError, StorageError, ValidationError
from oharness.fsio import atomic_write, is_temp_name, make_directory
from oharness.notes.format import parse_note_bytes
from oharness.notes.ids import check_id
from oharness.types import Clock

BACKUP_REASONS: Final[tuple[str, ...]] = (
    "forget",
    "remember-update",
    "page-delete",
    "conflict-take-cloud",
    "conflict-discard",
    "pull-update",
    "pull-delete",
    "extract-update",
    "task-update",
    "merge",
    "sync-merge",
    "restore-replace",
    "adopt",
)
UNKNOWN_REASON: Final = "unknown"
KEEP_DAYS: Final = 90
KEEP_NEWEST: Final = 500
_DAY_MS: Final = 86_400_000
_NAME: Final = re.compile(
    r"^(?P<ms>\d{10,16})-(?P<id>[A-Za-z0-9][A-Za-z0-9_-]*?)-(?P<reason>"
    + "|".join(re.escape(reason) for reason in BACKUP_REASONS)
    + r")(?:-(?P<n>\d+))?$"
)


@dataclass(frozen=True)
class BackupRecord:
    """One backup: what was saved, from where, why and when."""

    backup_id: str
    path: Path
    note_id: str | None
    reason: str
    created_at: int
    scope_dir: Path | None
    scope_key: str | None
    content_hash: str | None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view (for ``--json`` output and HTTP)."""
        return {
            "backupId": self.backup_id,
            "id": self.note_id,
            "reason": self.reason,
            "createdAt": self.created_at,
            "scopeDir": str(self.scope_dir) if self.scope_dir else None,
            "scopeKey": self.scope_key,
            "hash": self.content_hash,
            "path": str(self.path),
        }


class BackupStore:
    """The backup directory of one machine."""

    def __init__(self, directory: Path, *, clock: Clock) -> None:
        self.directory = directory
        self._clock = clock

    def write(
        self,
        data: bytes,
        *,
        note_id: str,
        reason: str,
        scope_dir: Path,
        scope_key: str,
        content_hash: str,
    ) -> BackupRecord:
        """Save a note file's bytes with a self-describing sidecar; returns the record."""
        check_id(note_id)
        if reason not in BACKUP_REASONS:
            raise ValidationError(f"unknown backup reason {reason!r}", field="reason")
        try:
            make_directory(self.directory)
        except OSError as exc:
            raise StorageError(
                f"cannot create the backup folder {self.directory}: {exc.strerror or exc}; "
                "nothing was changed",
                path=str(self.directory),
            ) from exc
        now = self._clock()
        stem = f"{now:013d}-{note_id}-{reason}"
        backup_id = self._reserve(stem)
        note_path = self.directory / f"{backup_id}.md"
        atomic_write(note_path, data)
        sidecar = {
            "version": 1,
            "id": note_id,
            "reason": reason,
            "at": now,
            "scopeDir": str(scope_dir),
            "scopeKey": scope_key,
            "hash": content_hash,
        }
        atomic_write(
            self.directory / f"{backup_id}.json",
            json.dumps(sidecar, ensure_ascii=False, indent=1).encode("utf-8"),
        )
        self.prune()
        return BackupRecord(
            backup_id, note_path, note_id, reason, now, scope_dir, scope_key, content_hash
        )

    def discard(self, record: BackupRecord) -> None:
        """Remove a backup taken for a change that did not happen (the file it copies is
        unchanged), so the list shows no change that was never made."""
        for path in (record.path, record.path.with_suffix(".json")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def _reserve(self, stem: str) -> str:
        """A backup id no other writer holds: its file is created exclusively (two processes
        backing up notes of the same id in the same millisecond never share a name)."""
        backup_id, counter = stem, 1
        while True:
            try:
                os.close(os.open(self.directory / f"{backup_id}.md", os.O_CREAT | os.O_EXCL, 0o600))
                return backup_id
            except FileExistsError:
                counter += 1
                backup_id = f"{stem}-{counter}"

    def recent(self, limit: int | None = 50) -> list[BackupRecord]:
        """Backups, newest first (``limit`` of them; ``None`` for all)."""
        records = [self._record(path) for path in self._note_files()]
        records.sort(key=_newest_last, reverse=True)
        return records if limit is None else records[:limit]

    def get(self, backup_id: str) -> BackupRecord:
        """One backup by id, or :class:`NotFoundError`."""
        # Any listed file name is a valid id (legacy backups may be named anything), but an id
        # is always one plain path segment: it can never reach outside the backup folder.
        unsafe = (
            not backup_id
            or backup_id.startswith(".")
            or any(char in backup_id for char in ("/", "\\", "\x00"))
        )
        path = self.directory / f"{backup_id}.md"
        if unsafe or not path.is_file():
            raise NotFoundError(
                f"no backup {backup_id!r}: use an id shown by 'oharness memory backups'",
                backupId=backup_id,
            )
        return self._record(path)

    def read_bytes(self, record: BackupRecord) -> bytes:
        """The saved note file bytes."""
        try:
            return record.path.read_bytes()
        except OSError as exc:
            raise StorageError(f"cannot read backup {record.path}: {exc}") from exc

    def prune(self) -> int:
        """Remove backups older than 90 days beyond the newest 500; returns how many."""
        files = self._note_files()
        if len(files) <= KEEP_NEWEST:
            return 0
        cutoff = self._clock() - KEEP_DAYS * _DAY_MS
        records = sorted((self._record(path) for path in files), key=_newest_last, reverse=True)
        removed = 0
        for record in records[KEEP_NEWEST:]:
            if record.created_at >= cutoff:
                continue
            for path in (record.path, record.path.with_suffix(".json")):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
                except OSError:
                    break
            removed += 1
        return removed

    def _note_files(self) -> list[Path]:
        try:
            with os.scandir(self.directory) as scan:
                return [
                    Path(entry.path)
                    for entry in scan
                    if entry.name.endswith(".md")
                    and not is_temp_name(entry.name)
                    and not entry.name.startswith(".")
                    and entry.is_file()
                ]
        except FileNotFoundError:
            return []

    def _record(self, path: Path) -> BackupRecord:
        backup_id = path.name[: -len(".md")]
        sidecar = self._read_sidecar(path.with_suffix(".json"))
        if sidecar is not None:
            scope_dir = sidecar.get("scopeDir")
            return BackupRecord(
                backup_id=backup_id,
                path=path,
                note_id=_str_or_none(sidecar.get("id")),
                reason=_str_or_none(sidecar.get("reason")) or UNKNOWN_REASON,
                created_at=_int_or(sidecar.get("at"), _mtime_ms(path)),
                scope_dir=Path(scope_dir) if isinstance(scope_dir, str) else None,
                scope_key=_str_or_none(sidecar.get("scopeKey")),
                content_hash=_str_or_none(sidecar.get("hash")),
            )
        return self._bare_record(backup_id, path)

    def _bare_record(self, backup_id: str, path: Path) -> BackupRecord:
        match = _NAME.match(backup_id)
        note_id: str | None = match.group("id") if match else None
        content_hash: str | None = None
        try:
            note = parse_note_bytes(path.read_bytes())
            note_id, content_hash = note.id, note.content_hash
        except (OSError, NoteFormatError):  # a bare legacy file may be anything: list it
            pass
        return BackupRecord(
            backup_id=backup_id,
            path=path,
            note_id=note_id,
            reason=match.group("reason") if match else UNKNOWN_REASON,
            created_at=int(match.group("ms")) if match else _mtime_ms(path),
            scope_dir=None,
            scope_key=None,
            content_hash=content_hash,
        )

    @staticmethod
    def _read_sidecar(path: Path) -> dict[str, object] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def _newest_last(record: BackupRecord) -> tuple[int, str, int]:
    """The order of backups, oldest first: by time, then the ``-<n>`` counter as a number.

    Backups of one note and reason in the same millisecond share a stem and are numbered in
    the order they were reserved (none, ``-2``, ... ``-9``, ``-10``), so ``-10`` is newer than
    ``-9``; a name we did not give sorts by its whole text.
    """
    match = _NAME.match(record.backup_id)
    if match is None:
        return record.created_at, record.backup_id, 0
    counter = match.group("n")
    stem = record.backup_id[: match.start("n") - 1] if counter else record.backup_id
    return record.created_at, stem, int(counter) if counter else 1


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int_or(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _mtime_ms(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns // 1_000_000
    except OSError:
        return 0
