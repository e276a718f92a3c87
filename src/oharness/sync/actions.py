"""Conflict listing and resolution over a workspace's sync targets: the library calls the CLI
and the daemon's REST endpoints share (spec 07.3, 07.7)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from oharness.errors import ValidationError
from oharness.notes.backups import BackupStore
from oharness.sync.conflicts import ConflictBook, ConflictRecord
from oharness.sync.resolve import DEFAULT_MAX_NOTE_BYTES, ConflictResolver, Resolution
from oharness.sync.service import SyncService, SyncTarget
from oharness.types import Clock

Keep = Literal["local", "cloud", "both"]


def conflict_records(
    service: SyncService, targets: Sequence[SyncTarget]
) -> list[tuple[SyncTarget, ConflictRecord]]:
    """Every open conflict of these targets (oldest first within a scope), with its target."""
    return [
        (target, record)
        for target in targets
        for record in ConflictBook(service.base(target).conflicts).records()
    ]


def list_conflicts(service: SyncService, targets: list[SyncTarget]) -> list[dict[str, Any]]:
    """Every open conflict of these targets, with its scope and both sides."""
    return [
        {"scope": target.scope, **record.to_json()}
        for target, record in conflict_records(service, targets)
    ]


def conflict_target(
    service: SyncService, targets: list[SyncTarget], note_id: str, scope: str | None
) -> SyncTarget:
    """The target holding an open conflict for ``note_id`` (or a clear refusal)."""
    for target in targets:
        if scope is not None and target.scope != scope:
            continue
        if note_id in ConflictBook(service.base(target).conflicts).ids():
            return target
    raise ValidationError(f"no open conflict for {note_id!r}; list the conflicts to see them")


def resolve_conflict(
    service: SyncService,
    target: SyncTarget,
    backups: BackupStore,
    note_id: str,
    *,
    keep: Keep | None,
    text: str | None,
    clock: Clock,
    max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES,
) -> Resolution:
    """Resolve one conflict (set-aside versions backed up); the next pass uploads it. A text
    merged by hand is checked like ``remember`` checks a note."""
    resolver = ConflictResolver(
        store=target.store,
        base=service.base(target),
        backups=backups,
        scope_key=target.scope_key,
        clock=clock,
        max_note_bytes=max_note_bytes,
    )
    return resolver.resolve(note_id, keep=keep, text=text)
