"""What one sync pass did: the ``sync now`` report and the scope's status (spec 07.7)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oharness.sync.local import NoteProblem


@dataclass
class PassResult:
    """What one pass did (the ``sync now`` report and the scope's status)."""

    skipped: str | None = None
    version: int | None = None
    pushed: list[str] = field(default_factory=list)
    pulled: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    deleted_here: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    unsyncable: list[str] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    added: int = 0
    modified: int = 0
    removed: int = 0
    plan: str | None = None
    changed_anything: bool = False
    #: The storage was found reset or restored; this pass re-synced as a first sync.
    reset: bool = False
    problems: list[NoteProblem] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """True when some note did not sync (unsyncable, refused or failed)."""
        return bool(self.problems or self.errors or self.rejected)

    def note_errors(self) -> list[dict[str, Any]]:
        """One entry per note that did not sync: ``{"id", "file", "code", "message"}``."""
        entries: list[dict[str, Any]] = [problem.to_json() for problem in self.problems]
        entries += [
            {"id": item["id"], "file": None, "code": item["code"], "message": item["message"]}
            for item in self.errors
        ]
        entries += [
            {"id": item["id"], "file": None, "code": item["reason"], "message": item["message"]}
            for item in self.rejected
        ]
        return entries

    def to_json(self) -> dict[str, Any]:
        return {
            "reset": self.reset,
            "noteErrors": self.note_errors(),
            "skipped": self.skipped,
            "version": self.version,
            "pushed": self.pushed,
            "pulled": self.pulled,
            "merged": self.merged,
            "conflicts": self.conflicts,
            "unsyncable": self.unsyncable,
            "rejected": self.rejected,
            "errors": self.errors,
            "lastPull": {"added": self.added, "modified": self.modified, "removed": self.removed},
            "plan": self.plan,
        }
