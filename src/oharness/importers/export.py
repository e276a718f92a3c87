"""Writing notes out: a plain folder copy, or Claude Code's auto-memory layout.

Exporting again into the same folder brings it up to date: new notes are written, changed
notes and Claude Code's ``MEMORY.md`` index are rewritten, files already up to date are left
alone. A file changed at the destination since the last export (or never written by an
export) is moved into ``.oharness-export-backups/<time>/`` before it is replaced, so nothing
there is lost. What each export wrote is recorded in ``.oharness-export.json``; files of notes
deleted since are left in place and reported. A dry run decides the same and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from oharness.errors import ValidationError
from oharness.fsio import atomic_write, fsync_directory
from oharness.memory.memory_service import MemoryService
from oharness.memory.workspace import notes_folder_at
from oharness.notes.store import StoredNote
from oharness.types import Clock

ExportFormat = Literal["folder", "claude-code"]
FORMATS: Final = ("folder", "claude-code")
MANIFEST: Final = ".oharness-export.json"
BACKUP_FOLDER: Final = ".oharness-export-backups"


@dataclass
class ExportReport:
    """What an export did (or, in a dry run, would do) to each file, named from PATH."""

    written: list[str] = field(default_factory=list)  # new files
    updated: list[str] = field(default_factory=list)  # rewritten: the note changed
    existing: list[str] = field(default_factory=list)  # already up to date, left alone
    backups: list[dict[str, str]] = field(default_factory=list)  # {"file", "backup"}
    stale: list[str] = field(default_factory=list)  # exported before, the note is gone
    dry_run: bool = False

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "dryRun": self.dry_run,
            "written": self.written,
            "updated": self.updated,
            "existing": self.existing,
            "backups": self.backups,
            "stale": self.stale,
        }


def export_notes(
    service: MemoryService,
    destination: Path,
    export_format: ExportFormat = "folder",
    *,
    clock: Clock,
    dry_run: bool = False,
    home: Path | None = None,
) -> ExportReport:
    """Write every note of the available scopes under ``destination``; never into a notes
    folder: this workspace's, or (given ``home``) that of the project ``destination`` is in
    (another clone, another project)."""
    if destination.exists() and not destination.is_dir():
        raise ValidationError(f"{destination} is a file; name a folder to export into")
    real = Path(os.path.realpath(destination))
    for scope in service.available_scopes():
        folder = service.store(scope).directory
        if real.is_relative_to(os.path.realpath(folder)):
            raise ValidationError(
                f"{destination} is inside the {scope} notes folder {folder}: an export there "
                "would become notes (and user notes would land in the project); name a folder "
                "outside it"
            )
    found = None if home is None else notes_folder_at(destination, home)
    if found is not None and real.is_relative_to(os.path.realpath(found[1])):
        raise ValidationError(
            f"{destination} is inside the notes folder of the project at {found[0]}: an export "
            "there would become that project's notes; name a folder outside it"
        )
    wanted: dict[str, bytes] = {}
    for scope in service.available_scopes():
        notes = sorted(service.store(scope).notes(), key=lambda s: (-s.note.updated_at, s.id))
        if export_format == "folder":
            for stored in notes:
                wanted[f"{scope}/{stored.path.name}"] = stored.path.read_bytes()
        else:
            wanted.update(_claude_files(f"{scope}/memory", notes))
    stamp = datetime.fromtimestamp(clock() / 1000, UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return _bring_up_to_date(destination, wanted, stamp, dry_run)


def _bring_up_to_date(
    destination: Path, wanted: dict[str, bytes], stamp: str, dry_run: bool
) -> ExportReport:
    report = ExportReport(dry_run=dry_run)
    recorded = _read_manifest(destination)
    kept: dict[str, str] = {}
    for name, data in wanted.items():
        path = destination / name
        digest = _digest(data)
        kept[name] = digest
        current = _read_regular(path)
        if current is None and not (path.exists() or path.is_symlink()):
            report.written.append(name)
        elif current == data:
            report.existing.append(name)
            continue
        else:
            if current is None or _digest(current) != recorded.get(name):
                backup = Path(BACKUP_FOLDER) / stamp / name
                report.backups.append({"file": name, "backup": backup.as_posix()})
                if not dry_run:
                    _move_aside(path, destination / backup)
            report.updated.append(name)
        if not dry_run:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data)
    for name, digest in recorded.items():
        if name not in wanted and (destination / name).is_file():
            report.stale.append(name)
            kept[name] = digest
    if not dry_run and (report.written or report.updated or kept != recorded):
        destination.mkdir(parents=True, exist_ok=True)
        manifest = {"version": 1, "files": dict(sorted(kept.items()))}
        atomic_write(destination / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    return report


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file at ``path`` (a symlink is not followed), else ``None``."""
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def _read_manifest(destination: Path) -> dict[str, str]:
    """What the last export wrote; an unreadable record counts as none (everything is kept)."""
    data = _read_regular(destination / MANIFEST)
    try:
        files = json.loads(data).get("files") if data is not None else None
    except (ValueError, AttributeError):
        return {}
    if not isinstance(files, dict):
        return {}
    return {name: value for name, value in files.items() if isinstance(value, str)}


def _move_aside(path: Path, backup: Path) -> None:
    backup.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, backup)
    fsync_directory(backup.parent)
    fsync_directory(path.parent)


def _claude_files(folder: str, notes: list[StoredNote]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    lines = ["# Memory index", ""]
    for stored in notes:
        note = stored.note
        front = [
            "---",
            f"name: {_quote(stored.id)}",
            f"description: {_quote(note.summary)}",
            f"type: {note.type or 'project'}",
            "---",
            "",
        ]
        text = "\n".join(front) + note.body.rstrip("\n") + "\n"
        files[f"{folder}/{stored.id}.md"] = text.encode("utf-8")
        lines.append(f"- [{_link_text(note.summary)}]({stored.id}.md) — {note.summary}")
    files[f"{folder}/MEMORY.md"] = ("\n".join(lines) + "\n").encode("utf-8")
    return files


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _link_text(text: str) -> str:
    return text.replace("[", "(").replace("]", ")")
