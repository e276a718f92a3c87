"""A backup seen before it is restored: its fields and text, and a line diff against the note
there now (Backups, spec 11 section 5; docs/page.md)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from oharness.memory.backup_list import backup_entry
from oharness.memory.memory_service import MemoryService
from oharness.notes.format import Note

LineKind = Literal["same", "removed", "added"]


@dataclass(frozen=True)
class FieldRow:
    """One field of the backup beside the note now (``now`` None: no note there now)."""

    name: str
    backup: str
    now: str | None

    @property
    def differs(self) -> bool:
        return self.now is not None and self.now != self.backup


@dataclass(frozen=True)
class DiffLine:
    """One body line: in both, only in the note now (removed by a restore), or only in the
    backup (brought back by it)."""

    kind: LineKind
    text: str


@dataclass(frozen=True)
class BackupPreview:
    backup_id: str
    note: Note
    current: Note | None
    fields: tuple[FieldRow, ...]
    lines: tuple[DiffLine, ...]

    @property
    def same(self) -> bool:
        return (
            self.current is not None
            and all(line.kind == "same" for line in self.lines)
            and (not any(row.differs for row in self.fields))
        )


def _fields(note: Note) -> dict[str, str]:
    return {"summary": note.summary, "type": note.type or "", "tags": ", ".join(note.tags)}


def body_diff(now: str, backup: str) -> tuple[DiffLine, ...]:
    """The lines of ``now`` and ``backup`` in order, each marked same, removed or added."""
    old, new = now.splitlines(), backup.splitlines()
    rows: list[DiffLine] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [DiffLine("same", line) for line in old[i1:i2]]
            continue
        rows += [DiffLine("removed", line) for line in old[i1:i2]]
        rows += [DiffLine("added", line) for line in new[j1:j2]]
    return tuple(rows)


def backup_preview(service: MemoryService, backup_id: str) -> BackupPreview | None:
    """What restoring ``backup_id`` would bring back (None: not a readable backup of this
    workspace). Raises ``NotFoundError`` for an unknown backup."""
    entry = backup_entry(service, service.backups().get(backup_id))
    if entry is None or entry.note is None or entry.scope is None:
        return None
    stored = service.store(entry.scope).get(entry.note.id)
    current = stored.note if stored is not None else None
    mine, theirs = _fields(entry.note), _fields(current) if current is not None else None
    fields = tuple(
        FieldRow(name, value, theirs[name] if theirs is not None else None)
        for name, value in mine.items()
    )
    if current is None:
        lines = tuple(DiffLine("added", line) for line in entry.note.body.splitlines())
    else:
        lines = body_diff(current.body, entry.note.body)
    return BackupPreview(backup_id, entry.note, current, fields, lines)
