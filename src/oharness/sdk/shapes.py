"""The JSON shapes the SDK's memory methods return (the daemon's answers, as documented in
``docs/daemon.md`` and ``/openapi.json``). Keys marked ``NotRequired`` appear only sometimes:
``conflict`` only on a note a sync conflict waits for."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

ScopeName = Literal["project", "user"]


class NoteItem(TypedDict):
    id: str
    scope: ScopeName
    type: str | None
    summary: str
    updatedAt: int
    conflict: NotRequired[str]


class NoteListing(TypedDict):
    notes: list[NoteItem]
    total: int
    offset: int
    nextOffset: int | None


class SearchResult(TypedDict):
    id: str
    scope: ScopeName
    summary: str
    score: float
    snippet: str
    conflict: NotRequired[str]


class SearchResults(TypedDict):
    query: str
    results: list[SearchResult]


class NoteLink(TypedDict):
    """A link of a note; ``missing`` when it names no note (``scope`` is then None)."""

    id: str
    scope: ScopeName | None
    summary: str | None
    missing: bool


class Note(TypedDict):
    id: str
    scope: ScopeName
    summary: str
    type: str | None
    tags: list[str]
    createdAt: int
    updatedAt: int
    body: str
    path: str
    hash: str
    links: list[NoteLink]
    incoming: list[NoteLink]
    extra: NotRequired[dict[str, Any]]
    conflict: NotRequired[str]
    conflictHelp: NotRequired[str]


class Backup(TypedDict):
    """One backup: when and why, and how restoring it compares with the note there now."""

    backupId: str
    id: str | None
    reason: str
    createdAt: int
    scopeDir: str | None
    scopeKey: str | None
    hash: str | None
    path: str
    summary: str | None
    restoreScope: ScopeName | None
    restorable: bool
    current: Literal["absent", "same", "older", "newer"] | None


class BackupListing(TypedDict):
    backups: list[Backup]


class Restored(TypedDict):
    id: str
    scope: ScopeName
    path: str
    backupId: str
    replacedBackupId: str | None
    changed: bool


class ConflictListing(TypedDict):
    """Open sync conflicts, each with both sides (``oharness sync conflicts --json``)."""

    conflicts: list[dict[str, Any]]
