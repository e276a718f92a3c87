"""Writing a plan through the memory service, so every rule of ``remember`` holds.

New notes are written before the notes that link to them, so ``[[new:N]]`` becomes the real
id as it is written. Notes that link to each other in a cycle cannot all be written that way:
the first one is written with the other's summary in place of the link, then rewritten with
the link once the other has its id (a backup of that first version is taken, like any
extraction rewrite). Updates are written last, each backing up the replaced version first
(reason ``extract-update``), and only when the note is still the version the model was shown.
Each write stands alone: one that is refused is dropped with its reason, the others are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from oharness.errors import ConflictError, OHarnessError
from oharness.extraction.parse import Dropped, NewEntry
from oharness.extraction.plan import (
    Plan,
    PlannedUpdate,
    default_scope,
    new_references,
    rewrite_links,
)
from oharness.memory.memory_service import UNSET, MemoryService
from oharness.types import Scope

log = logging.getLogger(__name__)

BACKUP_REASON: Final = "extract-update"


@dataclass(frozen=True)
class SavedNote:
    """A note a pass wrote, or would write (``action``: created, updated, unchanged,
    would-create, would-update). ``body`` is kept for dry runs only."""

    id: str | None
    scope: Scope
    summary: str
    action: str
    sources: tuple[str, ...] = ()
    body: str | None = None

    @property
    def saved(self) -> bool:
        return self.action in ("created", "updated")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "scope": self.scope,
            "summary": self.summary,
            "action": self.action,
            "sources": list(self.sources),
        }
        if self.body is not None:
            data["body"] = self.body
        return data


@dataclass
class Applied:
    saved: list[SavedNote] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)


def write_order(plan: Plan) -> tuple[list[NewEntry], set[int]]:
    """New notes, each after the new notes it links to; and those closing a cycle."""
    by_position = {entry.position: entry for entry in plan.new}
    visiting, done = set(), set()
    order: list[NewEntry] = []
    closing: set[int] = set()

    def targets(entry: NewEntry) -> Iterator[int]:
        for number in new_references(entry.body):
            number = plan.same_as.get(number, number)
            if number == entry.position:  # a note linking to itself needs its own id
                closing.add(number)
            elif number in by_position:
                yield number

    for root in plan.new:
        if root.position in done:
            continue
        stack = [(root, targets(root))]
        visiting.add(root.position)
        while stack:
            entry, pending = stack[-1]
            for number in pending:
                if number in visiting:
                    closing.add(entry.position)
                elif number not in done:
                    visiting.add(number)
                    stack.append((by_position[number], targets(by_position[number])))
                    break
            else:
                stack.pop()
                visiting.discard(entry.position)
                done.add(entry.position)
                order.append(entry)
    return order, closing


class _Writer:
    """The state of one application: the ids known so far and what became of each entry."""

    def __init__(self, plan: Plan, service: MemoryService, dry_run: bool) -> None:
        self.plan = plan
        self.service = service
        self.dry_run = dry_run
        self.ids: dict[int, str] = {}
        self.written: dict[int, tuple[Scope, str]] = {}
        self.result = Applied(dropped=list(plan.dropped))
        self.placeholder: dict[int, str | None] = {e.position: e.summary for e in plan.new}
        self.placeholder.update(plan.dangling)

    def known_ids(self) -> dict[int, str]:
        known = {number: ref[1] for number, ref in self.plan.aliases.items()}
        known.update(self.ids)
        for number, first in self.plan.same_as.items():
            if first in self.ids:
                known[number] = self.ids[first]
        return known

    def links(self, body: str, extra: frozenset[str] = frozenset()) -> str:
        known = self.known_ids()
        allowed = self.plan.shown_ids | set(known.values()) | extra
        return rewrite_links(body, allowed=allowed, new_ids=known, placeholder=self.placeholder)

    def drop(self, where: str, exc: OHarnessError, summary: str | None) -> None:
        self.result.dropped.append(Dropped(where, exc.message, summary))

    def create(self, entry: NewEntry) -> None:
        where, scope = f"new {entry.position}", default_scope(entry)
        body = self.links(entry.body)
        if self.dry_run:
            self.ids[entry.position] = f"new:{entry.position}"
            self.result.saved.append(
                SavedNote(None, scope, entry.summary, "would-create", (where,), body)
            )
            return
        try:
            done = self.service.remember(
                entry.summary, body, type=entry.type, tags=entry.tags, scope=scope
            )
        except OHarnessError as exc:
            self.drop(where, exc, entry.summary)
            return
        self.ids[entry.position] = done.id
        self.written[entry.position] = (done.scope, body)
        action = "created" if done.created else "unchanged"
        self.result.saved.append(SavedNote(done.id, done.scope, entry.summary, action, (where,)))

    def close_cycle(self, entry: NewEntry) -> None:
        """Rewrite a note written before a note it links to had an id."""
        if entry.position not in self.written:
            return
        scope, first_body = self.written[entry.position]
        final = self.links(entry.body)
        if final == first_body:
            return
        try:
            self.service.remember(
                entry.summary,
                final,
                id=self.ids[entry.position],
                scope=scope,
                backup_reason=BACKUP_REASON,
            )
        except OHarnessError as exc:  # the first version stays, with plain-text references
            log.warning("extraction: links of %s not rewritten: %s", self.ids[entry.position], exc)

    def update(self, update: PlannedUpdate) -> None:
        target = update.target
        where = ", ".join(update.sources)
        if self.dry_run:
            body = self.links(update.body, frozenset(target.links))
            self.result.saved.append(
                SavedNote(
                    target.id, target.scope, update.summary, "would-update", update.sources, body
                )
            )
            return
        try:
            current = self.service.find(target.id, target.scope)
            if current.note.content_hash != target.note.content_hash:
                raise ConflictError(
                    f"note {target.id!r} changed after it was shown to the model; its update "
                    "was not written (the next pass sees the new version)"
                )
            done = self.service.remember(
                update.summary,
                self.links(update.body, frozenset(current.links)),
                type=update.type,
                tags=UNSET if update.tags is UNSET else update.tags,
                scope=target.scope,
                id=target.id,
                backup_reason=BACKUP_REASON,
            )
        except OHarnessError as exc:
            self.drop(where, exc, update.summary)
            return
        action = "updated" if done.changed else "unchanged"
        self.result.saved.append(
            SavedNote(target.id, target.scope, update.summary, action, update.sources)
        )


def apply_plan(plan: Plan, service: MemoryService, *, dry_run: bool = False) -> Applied:
    """Write (or, with ``dry_run``, describe) the plan; refused writes become drops."""
    writer = _Writer(plan, service, dry_run)
    order, closing = write_order(plan)
    for entry in order:
        writer.create(entry)
    for entry in order:
        if entry.position in closing and not dry_run:
            writer.close_cycle(entry)
    for update in plan.updates:
        writer.update(update)
    return writer.result
