"""Merging notes of one scope (spec 05.2): the plan, the drafts, the batch of writes (pure).

A :class:`MergePlan` names the notes to merge, the one kept (the oldest: smallest
``createdAt``, then the smallest id), the notes of the scope whose ``[[links]]`` to a deleted
note are pointed at the kept one, and the content hash of every one of them. Applying refuses a
plan whose notes changed since (:func:`stale_notes`). :func:`merge_writes` turns a plan and an
accepted draft into the exact file bytes to write (``None``: delete), which the local write and
a commit to the cloud share, so both sides hold the same revisions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from oharness.errors import NotFoundError, ValidationError
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.links import extract_links
from oharness.types import Scope

DraftSource = Literal["concat", "model", "edited"]
SEPARATOR: Final = "\n---\n\n"
_LINK: Final = re.compile(r"\[\[([A-Za-z0-9][A-Za-z0-9_-]{0,127})\]\]")


@dataclass(frozen=True)
class MergePlan:
    """What a merge will change, and the versions it was planned against."""

    scope: Scope
    scope_key: str
    keep: str
    delete: tuple[str, ...]
    relink: tuple[str, ...]
    hashes: Mapping[str, str]

    @property
    def merged(self) -> tuple[str, ...]:
        """The notes merged into one: the kept note first."""
        return (self.keep, *self.delete)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (it can be handed back to :func:`plan_from_dict`)."""
        return {
            "scope": self.scope,
            "scopeKey": self.scope_key,
            "keep": self.keep,
            "delete": list(self.delete),
            "relink": list(self.relink),
            "hashes": dict(self.hashes),
        }


def plan_from_dict(data: Mapping[str, Any]) -> MergePlan:
    """A plan from :meth:`MergePlan.to_dict` (a page or daemon sends it back to apply)."""
    try:
        scope = data["scope"]
        if scope not in ("project", "user"):
            raise ValueError(scope)
        return MergePlan(
            scope=scope,
            scope_key=str(data["scopeKey"]),
            keep=str(data["keep"]),
            delete=tuple(str(item) for item in data["delete"]),
            relink=tuple(str(item) for item in data.get("relink", ())),
            hashes={str(k): str(v) for k, v in dict(data["hashes"]).items()},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"not a merge plan ({exc}); plan the merge again") from exc


@dataclass(frozen=True)
class MergeDraft:
    """The merged note's content; ``warnings`` says what was changed in an untrusted draft."""

    summary: str
    body: str
    tags: tuple[str, ...] = ()
    type: str | None = None
    source: DraftSource = "concat"
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "body": self.body,
            "tags": list(self.tags),
            "type": self.type,
            "source": self.source,
            "warnings": list(self.warnings),
        }


def _oldest_first(notes: Sequence[Note]) -> list[Note]:
    return sorted(notes, key=lambda note: (note.created_at, note.id))


def plan_merge(
    scope_notes: Sequence[Note], ids: Sequence[str], scope: Scope, scope_key: str
) -> MergePlan:
    """Plan merging ``ids`` (two or more notes of one scope, given all of that scope's notes)."""
    wanted = list(dict.fromkeys(ids))
    if len(wanted) < 2:
        raise ValidationError("a merge needs at least two different notes", field="ids")
    by_id = {note.id: note for note in scope_notes}
    missing = [note_id for note_id in wanted if note_id not in by_id]
    if missing:
        raise NotFoundError(
            f"no note {', '.join(missing)} in the {scope} scope; merge notes of one scope "
            "('oharness memory review' lists same-topic groups)",
            ids=missing,
        )
    ordered = _oldest_first([by_id[note_id] for note_id in wanted])
    keep, deleted = ordered[0], tuple(note.id for note in ordered[1:])
    gone = set(deleted)
    relink = tuple(
        sorted(
            note.id
            for note in scope_notes
            if note.id not in gone and note.id != keep.id and gone & set(extract_links(note.body))
        )
    )
    involved = (keep.id, *deleted, *relink)
    return MergePlan(
        scope, scope_key, keep.id, deleted, relink, {i: by_id[i].content_hash for i in involved}
    )


def stale_notes(plan: MergePlan, current: Mapping[str, Note]) -> list[str]:
    """The plan's notes that changed or disappeared since it was made."""
    return [
        note_id
        for note_id, expected in plan.hashes.items()
        if (note := current.get(note_id)) is None or note.content_hash != expected
    ]


def stale_message(plan: MergePlan, changed: Sequence[str]) -> str:
    """The refusal for a stale plan: what changed and what to do."""
    return (
        f"the merge was planned on other versions: {', '.join(changed)} changed or disappeared "
        "since; nothing was changed: review the notes and plan the merge again"
    )


def rewrite_links(body: str, deleted: set[str], keep: str) -> str:
    """``[[deleted-id]]`` → ``[[keep]]`` everywhere in ``body``."""
    if "[[" not in body:
        return body

    def point(match: re.Match[str]) -> str:
        return f"[[{keep}]]" if match.group(1) in deleted else match.group(0)

    return _LINK.sub(point, body)


def concat_draft(plan: MergePlan, notes: Mapping[str, Note]) -> MergeDraft:
    """All originals concatenated, oldest first (手动合并): nothing is lost, a person edits."""
    ordered = [notes[note_id] for note_id in plan.merged]
    keep = ordered[0]
    parts = [keep.body.rstrip("\n") + "\n"]
    for note in ordered[1:]:
        parts.append(f"{note.summary}\n\n{note.body.rstrip(chr(10))}\n")
    tags = tuple(dict.fromkeys(tag for note in ordered for tag in note.tags))
    return MergeDraft(keep.summary, SEPARATOR.join(parts), tags, keep.type, "concat")


def draft_file_text(plan: MergePlan, draft: MergeDraft, notes: Mapping[str, Note]) -> str:
    """The draft as a note file a person edits (the kept note's id and times)."""
    keep = notes[plan.keep]
    note = keep.with_changes(
        summary=draft.summary, body=draft.body, tags=draft.tags, type=draft.type
    )
    return serialise_note_bytes(note).decode("utf-8")


def draft_from_file_text(plan: MergePlan, text: str) -> MergeDraft:
    """A person's edited draft file back as a draft (its id must stay the kept one)."""
    try:
        note = parse_note_bytes(text.encode("utf-8"))
    except Exception as exc:  # a NoteFormatError, said plainly
        raise ValidationError(f"the edited draft cannot be read: {exc}") from exc
    if note.id != plan.keep:
        raise ValidationError(
            f"the edited draft's id changed to {note.id!r}; the merged note keeps {plan.keep!r}",
            field="id",
        )
    return MergeDraft(note.summary, note.body, note.tags, note.type, "edited")


def merge_writes(
    plan: MergePlan, draft: MergeDraft, notes: Mapping[str, Note], now: int
) -> list[tuple[str, bytes | None]]:
    """The batch: the kept note's new file, each relinked note's, and ``None`` per deletion."""
    gone = set(plan.delete)
    keep = notes[plan.keep]
    created = min(notes[note_id].created_at for note_id in plan.merged)
    merged = keep.with_changes(
        summary=draft.summary,
        body=rewrite_links(draft.body, gone, plan.keep),
        tags=draft.tags,
        type=draft.type,
        created_at=created,
        updated_at=max(now, keep.updated_at),
    )
    writes: list[tuple[str, bytes | None]] = [(plan.keep, serialise_note_bytes(merged))]
    for note_id in plan.relink:
        note = notes[note_id]
        body = rewrite_links(note.body, gone, plan.keep)
        changed = note.with_changes(body=body, updated_at=max(now, note.updated_at))
        writes.append((note_id, serialise_note_bytes(changed)))
    writes.extend((note_id, None) for note_id in plan.delete)
    return writes
