"""From parsed entries to the writes of a pass: the rules on what the model may touch.

- An update names a note shown with its full body; any other id is dropped (the model never
  saw what it would replace). A second update of the same note in one answer is dropped.
- **Likely duplicates.** A new note whose summary and tags are on the same topic as a shown
  note (the similarity of ``likelyDuplicate``, 02.1, at its threshold) is not saved as a
  second note. If that note was shown in full, the new note becomes an update of it: the
  existing summary and type stay, the tags are joined, and the new body is appended below
  the existing one (unless one already contains the other). If it was shown by summary only,
  the new note is dropped, since what it would replace was never read. A new note on the same
  topic as an earlier new note of the same answer is dropped too. Links to a note dropped this
  way (``[[new:N]]``) point to the note it duplicates.
- Links are rewritten by :func:`rewrite_links` when the ids are known (see there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Final

from oharness.extraction.parse import Dropped, NewEntry, ParsedAnswer, UpdateEntry
from oharness.extraction.shown_notes import NoteRef, ShownNotes
from oharness.memory.memory_service import UNSET, Unset
from oharness.notes.format import Note
from oharness.notes.store import StoredNote
from oharness.recall.score import LIKELY_DUPLICATE
from oharness.types import Scope

NEW_LINK: Final = re.compile(r"\[\[new:(\d{1,6})\]\]")
ID_LINK: Final = re.compile(r"\[\[([A-Za-z0-9][A-Za-z0-9_-]{0,127})\]\]")

#: Summary + tags similarity of two notes, 0..1 (the recall index's ``similarity``).
Similarity = Callable[[Note, Note], float]


@dataclass(frozen=True)
class PlannedUpdate:
    """A write over an existing, fully shown note; ``sources`` names the entries behind it."""

    target: StoredNote
    summary: str
    body: str
    tags: tuple[str, ...] | Unset
    type: str | Unset | None
    sources: tuple[str, ...]
    redacted: bool = False


@dataclass
class Plan:
    """The writes of one pass, before any id of a new note is known."""

    new: list[NewEntry] = field(default_factory=list)
    updates: list[PlannedUpdate] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    #: ``[[new:N]]`` of a dropped duplicate -> the existing note it duplicates
    aliases: dict[int, NoteRef] = field(default_factory=dict)
    #: ``[[new:N]]`` of a dropped duplicate of an earlier new note -> that note's number
    same_as: dict[int, int] = field(default_factory=dict)
    #: summaries of new entries that will never get an id (their links become plain text)
    dangling: dict[int, str | None] = field(default_factory=dict)
    shown_ids: frozenset[str] = frozenset()


def merged_body(existing: str, addition: str) -> str:
    """``addition`` below ``existing``, unless one already holds the other."""
    old, new = existing.strip(), addition.strip()
    if old in new:
        return addition
    if new in old:
        return existing
    return existing.rstrip("\n") + "\n\n" + addition


def _draft(entry: NewEntry) -> Note:
    return Note("draft", entry.summary, entry.body, entry.tags, entry.type)


def _closest(
    draft: Note, candidates: Collection[Note], similarity: Similarity
) -> tuple[float, int] | None:
    best: tuple[float, int] | None = None
    for position, other in enumerate(candidates):
        score = similarity(draft, other)
        if score >= LIKELY_DUPLICATE and (best is None or score > best[0]):
            best = (score, position)
    return best


def _plan_updates(parsed: ParsedAnswer, shown: ShownNotes, plan: Plan) -> dict[str, int]:
    by_id: dict[str, int] = {}
    for number, entry in enumerate(parsed.updates, start=1):
        where = f"update {number} ({entry.id})"
        target = shown.updatable(entry.id)
        if target is None:
            seen = "shown by summary only" if entry.id in plan.shown_ids else "not shown"
            reason = f"note {entry.id!r} was {seen}; only notes shown in full can be updated"
            plan.dropped.append(Dropped(where, reason, entry.summary))
            continue
        if entry.id in by_id:
            plan.dropped.append(Dropped(where, "a second update of the same note", entry.summary))
            continue
        by_id[entry.id] = len(plan.updates)
        plan.updates.append(_update_of(target, entry, where))
    return by_id


def _update_of(target: StoredNote, entry: UpdateEntry, where: str) -> PlannedUpdate:
    return PlannedUpdate(
        target,
        entry.summary or target.note.summary,
        entry.body,
        entry.tags,
        entry.type,
        (where,),
        entry.redacted,
    )


def _unchanged(target: StoredNote) -> PlannedUpdate:
    return PlannedUpdate(target, target.note.summary, target.note.body, UNSET, UNSET, ())


def _merge_into(update: PlannedUpdate, entry: NewEntry, where: str) -> PlannedUpdate:
    base_tags = update.target.note.tags if isinstance(update.tags, Unset) else update.tags
    return PlannedUpdate(
        update.target,
        update.summary,
        merged_body(update.body, entry.body),
        tuple(dict.fromkeys((*base_tags, *entry.tags))),
        update.type,
        (*update.sources, where),
        update.redacted or entry.redacted,
    )


def plan_batch(parsed: ParsedAnswer, shown: ShownNotes, similarity: Similarity | None) -> Plan:
    """Apply the rules of the module notes to a parsed answer."""
    plan = Plan(dropped=list(parsed.dropped), shown_ids=shown.shown_ids())
    plan.dangling.update(parsed.dropped_new)
    by_id = _plan_updates(parsed, shown, plan)
    existing = shown.all()
    for entry in parsed.new:
        where = f"new {entry.position}"
        if similarity is None:
            plan.new.append(entry)
            continue
        draft = _draft(entry)
        twin = _closest(draft, [stored.note for stored in existing], similarity)
        if twin is not None:
            target = existing[twin[1]]
            plan.aliases[entry.position] = (target.scope, target.id)
            if shown.updatable(target.id) is target:
                index = by_id.get(target.id)
                current = plan.updates[index] if index is not None else _unchanged(target)
                merged = _merge_into(current, entry, f"{where} (likely duplicate of {target.id})")
                if index is None:
                    by_id[target.id] = len(plan.updates)
                    plan.updates.append(merged)
                else:
                    plan.updates[index] = merged
                continue
            reason = f"likely duplicate of {target.id!r}, which was shown by summary only"
            plan.dropped.append(Dropped(where, reason, entry.summary))
            continue
        earlier = _closest(draft, [_draft(other) for other in plan.new], similarity)
        if earlier is not None:
            first = plan.new[earlier[1]]
            plan.same_as[entry.position] = first.position
            reason = f"likely duplicate of new note {first.position} of the same answer"
            plan.dropped.append(Dropped(where, reason, entry.summary))
            continue
        plan.new.append(entry)
    return plan


def rewrite_links(
    body: str,
    *,
    allowed: Collection[str],
    new_ids: Mapping[int, str],
    placeholder: Mapping[int, str | None],
) -> str:
    """Links the model may make, made; the others turned into plain text.

    ``[[new:N]]`` becomes ``[[id]]`` once note N has an id; a number with no note (never
    listed, or dropped) becomes that entry's summary in plain text when there was one, else it
    is removed. ``[[id]]`` stays only when ``id`` is in ``allowed`` (the ids shown to the model,
    the notes of this pass, and for an update the links its current body already had);
    otherwise it loses its brackets.
    """

    def new_link(match: re.Match[str]) -> str:
        position = int(match.group(1))
        if position in new_ids:
            return f"[[{new_ids[position]}]]"
        return placeholder.get(position) or ""

    def id_link(match: re.Match[str]) -> str:
        target = match.group(1)
        return match.group(0) if target in allowed else target

    return ID_LINK.sub(id_link, NEW_LINK.sub(new_link, body))


def new_references(body: str) -> list[int]:
    """The ``[[new:N]]`` numbers a body refers to, in order, each once."""
    return list(dict.fromkeys(int(match.group(1)) for match in NEW_LINK.finditer(body)))


def default_scope(entry: NewEntry) -> Scope:
    """Where a new note goes: the scope it names, else by its type (01.3)."""
    if entry.scope is not None:
        return entry.scope
    return "user" if entry.type == "user" else "project"
