"""Writing notes out: a plain folder copy, or Claude Code's auto-memory layout.

Export never overwrites: a file that already exists at the destination is left alone and
reported, so exporting twice into the same folder is safe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from oharness.fsio import atomic_write
from oharness.notes.store import StoredNote
from oharness.tools.service import MemoryService

ExportFormat = Literal["folder", "claude-code"]
FORMATS: Final = ("folder", "claude-code")


@dataclass
class ExportReport:
    """Files written and files left alone because they existed."""

    written: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {"written": self.written, "existing": self.existing}


def export_notes(
    service: MemoryService, destination: Path, export_format: ExportFormat = "folder"
) -> ExportReport:
    """Write every note of the available scopes under ``destination``."""
    report = ExportReport()
    if destination.exists() and not destination.is_dir():
        from oharness.errors import ValidationError

        raise ValidationError(f"{destination} is a file; name a folder to export into")
    for scope in service.available_scopes():
        notes = sorted(service.store(scope).notes(), key=lambda s: (-s.note.updated_at, s.id))
        if export_format == "folder":
            for stored in notes:
                _write(
                    destination / scope / stored.path.name,
                    stored.path.read_bytes(),
                    report,
                    destination,
                )
        else:
            _write_claude(destination / scope / "memory", notes, report, destination)
    return report


def _write(path: Path, data: bytes, report: ExportReport, base: Path) -> None:
    name = path.relative_to(base).as_posix()
    if path.exists() or path.is_symlink():
        report.existing.append(name)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
    report.written.append(name)


def _write_claude(folder: Path, notes: list[StoredNote], report: ExportReport, base: Path) -> None:
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
        _write(folder / f"{stored.id}.md", text.encode("utf-8"), report, base)
        lines.append(f"- [{_link_text(note.summary)}]({stored.id}.md) — {note.summary}")
    _write(folder / "MEMORY.md", ("\n".join(lines) + "\n").encode("utf-8"), report, base)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _link_text(text: str) -> str:
    return text.replace("[", "(").replace("]", ")")
