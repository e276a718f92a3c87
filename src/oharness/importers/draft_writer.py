"""Bringing drafts into the notes: the memory service's checks, never overwriting.

Every draft goes through the same cleaning and credential checks as ``remember``; an id that
exists already (letter case folded) or content equal to an existing note is skipped and
reported, so running an import twice changes nothing the second time. A new id is drawn from
the note's content (not at random), so a dry run names the ids the real run then writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from oharness.errors import ConflictError, OHarnessError
from oharness.importers.source import Draft, Reading, Skip
from oharness.memory.memory_service import MemoryService
from oharness.notes.format import Note
from oharness.notes.ids import check_type, clean_body, clean_summary, clean_tags, generate_id
from oharness.notes.secrets import check_no_secrets
from oharness.notes.store import NoteStore
from oharness.types import Clock, HexSource, Scope, default_scope_for, parse_scope

Outcome = Literal["imported", "would import", "skipped", "refused"]
_ID_ATTEMPTS: Final = 32


@dataclass(frozen=True)
class ItemReport:
    """What happened to one source item."""

    source: str
    outcome: Outcome
    reason: str = ""
    id: str | None = None
    scope: str | None = None
    project: str | None = None  # the project folder it went to (``--all`` only)


@dataclass
class ImportReport:
    """The whole run: one line per item, counts by outcome."""

    items: list[ItemReport] = field(default_factory=list)
    dry_run: bool = False

    def count(self, outcome: Outcome) -> int:
        """How many items ended with ``outcome``."""
        return sum(1 for item in self.items if item.outcome == outcome)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        outcomes: tuple[Outcome, ...] = ("imported", "would import", "skipped", "refused")
        return {
            "dryRun": self.dry_run,
            "counts": {outcome: self.count(outcome) for outcome in outcomes},
            "items": [
                {k: v for k, v in vars(item).items() if v not in (None, "")} for item in self.items
            ],
        }


def import_reading(
    service: MemoryService,
    reading: Reading,
    *,
    clock: Clock,
    max_note_bytes: int,
    hex_source: HexSource | None = None,
    scope: Scope | None = None,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
    seen: dict[Path, SeenNotes] | None = None,
) -> ImportReport:
    """Import every draft of ``reading``; skips of the reader are reported as skipped.

    ``hex_source`` replaces the content-drawn id suffixes (tests); leave it out otherwise.
    ``seen``, shared by the imports of one run into several projects, lets a dry run see
    what the run puts into a folder they share (the user scope), as the real run does.
    """
    report = ImportReport(dry_run=dry_run)
    report.items.extend(_skipped(reading.skips))
    seen = {} if seen is None else seen
    for draft in reading.drafts:
        report.items.append(
            _import_one(service, draft, scope, dry_run, seen, clock, hex_source, max_note_bytes)
        )
        if progress is not None:
            progress(1)
    return report


def _skipped(skips: Iterable[Skip]) -> list[ItemReport]:
    return [ItemReport(skip.source, "skipped", skip.reason) for skip in skips]


def _import_one(
    service: MemoryService,
    draft: Draft,
    scope: Scope | None,
    dry_run: bool,
    seen: dict[Path, SeenNotes],
    clock: Clock,
    hex_source: HexSource | None,
    max_note_bytes: int,
) -> ItemReport:
    try:
        note = _clean(draft, max_note_bytes, clock)
        target = scope or (parse_scope(draft.scope) if draft.scope else None)
        target = target or default_scope_for(note.type)
        store = service.store(target)
    except OHarnessError as exc:
        return ItemReport(draft.source, "refused", exc.message)
    with store.locked():
        store.refresh(full=True)
        digest = note.content_hash_without_id
        known = seen.get(store.directory)
        if known is None:
            known = seen[store.directory] = SeenNotes.of(store)
        if digest in known.digests:
            return ItemReport(draft.source, "skipped", "the same content is already a note")
        # An id already taken by other content (Claude Code names the user note of every
        # project user_role.md) is never overwritten: the note comes in under a new id.
        taken = draft.id is not None and draft.id.casefold() in known.ids
        reason = f"{draft.id!r} is another note already: imported under a new id" if taken else ""
        note_id = draft.id if draft.id is not None and not taken else None
        note_id = note_id or _free_id(store, known, note.summary, hex_source or _drawn(digest))
        known.digests.add(digest)
        known.ids.add(note_id.casefold())
        if dry_run:
            return ItemReport(draft.source, "would import", reason, note_id, target)
        try:
            store.save(note.with_changes(id=note_id), create=True)
        except OHarnessError as exc:
            return ItemReport(draft.source, "refused", exc.message, note_id, target)
    return ItemReport(draft.source, "imported", reason, note_id, target)


def _clean(draft: Draft, max_note_bytes: int, clock: Clock) -> Note:
    summary = clean_summary(draft.summary)
    body = clean_body(draft.body, max_note_bytes)
    note_type = check_type(draft.type)
    tags = clean_tags(list(draft.tags))
    check_no_secrets({"summary": summary, "tags": "\n".join(tags), "body": body})
    now = clock()
    updated = draft.updated_at or draft.created_at or now
    created = min(draft.created_at or updated, updated)
    return Note("draft", summary, body, tags, note_type, created, updated)


@dataclass
class SeenNotes:
    """Digests and folded ids of a scope, including those this run has added."""

    digests: set[str]
    ids: set[str]

    @classmethod
    def of(cls, store: NoteStore) -> SeenNotes:
        notes = store.notes()
        return cls({s.digest_without_id for s in notes}, {s.id.casefold() for s in notes})


def _free_id(store: NoteStore, known: SeenNotes, summary: str, hex_source: HexSource) -> str:
    for _ in range(_ID_ATTEMPTS):
        candidate = generate_id(summary, hex_source)
        if candidate.casefold() not in known.ids and not store.path_for(candidate).exists():
            return candidate
    raise ConflictError("could not find a free id for this summary", field="summary")


def _drawn(digest: str) -> HexSource:
    """Hex characters drawn from ``digest``: the same note gets the same id suffixes."""
    attempt = 0

    def source(count: int) -> str:
        nonlocal attempt
        attempt += 1
        return hashlib.sha256(f"{digest}:{attempt}".encode()).hexdigest()[:count]

    return source
