"""Structured results of the memory tools, with the JSON shapes of spec 02.1."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oharness.memory.conflict_marks import RESOLVE, WAITING
from oharness.types import Scope


def _conflict(note_id: str) -> dict[str, Any]:
    """The ``memory`` tool's mark on a note whose sync conflict waits."""
    return {
        "conflict": WAITING,
        "conflictHelp": f"this machine and another changed {note_id} differently; the text "
        f"here is this machine's. Ask the person to resolve it in {RESOLVE}.",
    }


@dataclass(frozen=True)
class RememberResult:
    id: str
    scope: Scope
    path: str
    created: bool
    changed: bool
    dangling_links: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: ``[{id, scope, summary, score}]``; ``None`` when recall is not available.
    related: tuple[dict[str, Any], ...] | None = None
    likely_duplicate: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "scope": self.scope,
            "path": self.path,
            "created": self.created,
            "changed": self.changed,
        }
        if self.related is not None:
            data["related"] = list(self.related)
            data["likelyDuplicate"] = self.likely_duplicate
        data["danglingLinks"] = list(self.dangling_links)
        data["warnings"] = list(self.warnings)
        return data


@dataclass(frozen=True)
class LinkView:
    """A link of a note: the note it names (``id``; the text as written when it names none)."""

    id: str
    scope: Scope | None
    summary: str | None
    #: The link as written (``[[target]]``): an id, an id without its hash suffix, a summary.
    target: str | None = None
    #: It matched several notes by stem or summary, so it names none (notes/links.py).
    ambiguous: bool = False

    def to_dict(self) -> dict[str, Any]:
        if self.scope is None:
            return {"id": self.id, "scope": None, "summary": "missing", "missing": True}
        return {"id": self.id, "scope": self.scope, "summary": self.summary, "missing": False}


@dataclass(frozen=True)
class NoteView:
    id: str
    scope: Scope
    summary: str
    type: str | None
    tags: tuple[str, ...]
    created_at: int
    updated_at: int
    body: str
    path: str
    hash: str
    links: tuple[LinkView, ...]
    incoming: tuple[LinkView, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    #: A sync conflict waits for this note (the local version is not the only one).
    conflict: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "summary": self.summary,
            "type": self.type,
            "tags": list(self.tags),
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "body": self.body,
            "path": self.path,
            "hash": self.hash,
            "links": [link.to_dict() for link in self.links],
            "incoming": [link.to_dict() for link in self.incoming],
            **({"extra": self.extra} if self.extra else {}),
            **(_conflict(self.id) if self.conflict else {}),
        }


@dataclass(frozen=True)
class ListingItem:
    id: str
    scope: Scope
    type: str | None
    summary: str
    updated_at: int
    conflict: bool = False

    def line(self) -> str:
        """``- [type] summary (id)`` with a ``user:`` marker for user notes, and
        `` [conflict waiting]`` when a sync conflict waits for it."""
        kind = f"[{self.type}] " if self.type else ""
        marker = "user:" if self.scope == "user" else ""
        flag = f" [conflict {WAITING}]" if self.conflict else ""
        return f"- {kind}{self.summary} ({marker}{self.id}){flag}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "type": self.type,
            "summary": self.summary,
            "updatedAt": self.updated_at,
            **({"conflict": WAITING} if self.conflict else {}),
        }


@dataclass(frozen=True)
class Listing:
    items: tuple[ListingItem, ...]
    total: int
    offset: int
    next_offset: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "notes": [item.to_dict() for item in self.items],
            "total": self.total,
            "offset": self.offset,
            "nextOffset": self.next_offset,
        }


@dataclass(frozen=True)
class ForgetResult:
    id: str
    scope: Scope
    backup_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "scope": self.scope, "backupId": self.backup_id}


@dataclass(frozen=True)
class RestoreResult:
    id: str
    scope: Scope
    path: str
    backup_id: str
    replaced_backup_id: str | None
    changed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "path": self.path,
            "backupId": self.backup_id,
            "replacedBackupId": self.replaced_backup_id,
            "changed": self.changed,
        }
