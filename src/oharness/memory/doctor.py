"""A health report of the notes folders: what was skipped and why (``oharness memory doctor``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oharness.memory.memory_service import MemoryService
from oharness.notes.ids import MAX_SUMMARY_CHARS
from oharness.notes.invisible import invisible_problem
from oharness.notes.loose import LooseFile, find_loose_files
from oharness.notes.secrets import find_secrets
from oharness.notes.store import NoteStore, StoredNote
from oharness.notes.tempfiles import is_own_temp_name
from oharness.types import NOTE_TYPES

#: Finding kinds that are information, not problems (a dangling link is usually intended).
INFO_KINDS = frozenset({"dangling_link", "write_in_progress"})


@dataclass(frozen=True)
class Finding:
    scope: str
    kind: str
    path: str
    message: str

    @property
    def is_problem(self) -> bool:
        return self.kind not in INFO_KINDS

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "kind": self.kind,
            "path": self.path,
            "message": self.message,
            "problem": self.is_problem,
        }


@dataclass
class DoctorReport:
    scopes: dict[str, dict[str, Any]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not any(finding.is_problem for finding in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "scopes": self.scopes,
            "findings": [finding.to_dict() for finding in self.findings],
            "warnings": self.warnings,
        }


def _credential_findings(scope: str, stored: StoredNote) -> list[Finding]:
    """A credential written into a note by hand: named by kind, field and line, never shown."""
    note = stored.note
    fields = {"summary": note.summary, "tags": "\n".join(note.tags), "body": note.body}
    return [
        Finding(
            scope,
            "credential",
            str(stored.path),
            f"holds {finding.describe()}: models see it as [credential removed]; move the "
            "secret to a password manager or an environment variable and edit the note to "
            "say where it lives",
        )
        for finding in find_secrets(fields)
    ]


def _invisible_findings(scope: str, stored: StoredNote) -> list[Finding]:
    """An invisible character written into a summary or a tag by hand (the tools refuse one)."""
    note = stored.note
    fields = [("summary", note.summary)]
    fields += [(f"tag {number}", tag) for number, tag in enumerate(note.tags, start=1)]
    findings = []
    for name, value in fields:
        problem = invisible_problem(value)
        if problem is not None:
            message = (
                f"{name} holds {problem}: it can make the text read as something else; models "
                "and the Memory page are shown its code point instead; edit the note to remove it"
            )
            findings.append(Finding(scope, "invisible_character", str(stored.path), message))
    return findings


def _temp_finding(scope: str, store: NoteStore, path: Path) -> Finding:
    """A fresh temp file is a write in progress; an old one a write that was killed."""
    if not is_own_temp_name(path.name):
        message = "a hidden .tmp file: never loaded as a note, never removed by oharness"
        return Finding(scope, "stray_temp", str(path), message)
    if not store.is_stale_temp(path):
        message = (
            "a write in progress (its temp file is under 10 minutes old); if it stays, the "
            "next write to this folder removes it"
        )
        return Finding(scope, "write_in_progress", str(path), message)
    message = (
        "a temp file left by an interrupted write; never loaded, removed by the next write "
        "to this folder (or delete it)"
    )
    return Finding(scope, "stray_temp", str(path), message)


def loose_files(service: MemoryService) -> list[LooseFile]:
    """Markdown files of both notes folders that are not loaded as notes (not a note yet,
    or a note renamed or moved by hand), project first, each with the reason and the fix."""
    return [
        loose
        for scope in service.available_scopes()
        for loose in find_loose_files(service.store(scope))
    ]


def _load_findings(scope: str, store: NoteStore) -> list[Finding]:
    """Files skipped at load, and Markdown files the folder holds but never loads (in a
    subfolder, or not ending in ``.md``), with the fix for each."""
    loose = {found.path: found for found in find_loose_files(store)}
    findings = []
    for problem in store.problems():
        found = loose.pop(problem.path, None)
        message = found.message if found is not None else problem.message
        findings.append(Finding(scope, problem.reason, str(problem.path), message))
    for found in loose.values():
        findings.append(Finding(scope, found.code, str(found.path), found.message))
    return findings


def diagnose(service: MemoryService, warnings: list[str]) -> DoctorReport:
    """Check both scopes; files are only read, never changed."""
    report = DoctorReport(warnings=list(warnings))
    for scope in service.available_scopes():
        store = service.store(scope)
        store.refresh(full=True)
        notes = store.notes()
        skipped = _load_findings(scope, store)  # files there not read as notes, each named
        report.scopes[scope] = {
            "directory": str(store.directory),
            "notes": len(notes),
            "skipped": len(skipped),
            "unloaded": len(store.unloaded()),
        }
        report.findings.extend(skipped)
        for path in store.unloaded():
            report.findings.append(
                Finding(scope, "unloaded", str(path), "not loaded: memory.maxNotes reached")
            )
        for path in store.stray_temp_files():
            report.findings.append(_temp_finding(scope, store, path))
        for stored in notes:
            report.findings.extend(_credential_findings(scope, stored))
            report.findings.extend(_invisible_findings(scope, stored))
            note = stored.note
            if len(note.summary) > MAX_SUMMARY_CHARS:
                report.findings.append(
                    Finding(scope, "long_summary", str(stored.path), "summary over 200 characters")
                )
            size = len(note.body.encode("utf-8"))
            if size > service.max_note_bytes:  # written by hand: no write takes it
                report.findings.append(
                    Finding(
                        scope,
                        "long_body",
                        str(stored.path),
                        f"the body is {size:,} bytes, over memory.maxNoteBytes "
                        f"({service.max_note_bytes:,}): split it into linked notes (an update "
                        "of it is refused, and a sync server with the same limit refuses it)",
                    )
                )
            if note.type is not None and note.type not in NOTE_TYPES:
                report.findings.append(
                    Finding(scope, "unknown_type", str(stored.path), f"unknown type {note.type!r}")
                )
            for target in service.dangling_links(note.body):
                report.findings.append(
                    Finding(
                        scope,
                        "dangling_link",
                        str(stored.path),
                        f"links to [[{target}]], which exists in neither scope",
                    )
                )
    for scope in ("project", "user"):
        if scope not in report.scopes:
            report.scopes[scope] = {"available": False}
    return report
