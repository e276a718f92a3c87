"""Three-way merge of whole notes (spec 07.2).

- ``summary`` and ``type`` come from the side that changed them; changed differently on both
  sides → conflict;
- ``tags`` merge as sets: what either side added is kept, what either side removed is dropped
  (order: ours, then what only theirs added);
- bodies merge line by line (:func:`oharness.merge.text.merge_text`);
- the merged body must fit ``max_body_bytes`` or → conflict;
- ``createdAt`` is the earlier one; ``updatedAt`` is the merge time;
- unknown frontmatter keys merge key by key the same way; where both sides set a key
  differently, ours is kept (those keys are not part of the content hash).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from oharness.merge.text import ConflictRegion, merge_text
from oharness.notes.format import Note

T = TypeVar("T")
_ABSENT = object()


@dataclass(frozen=True)
class NoteMerge:
    """The merged note, or why it could not be merged (``fields``: summary, type, body, size)."""

    note: Note | None
    conflicts: tuple[str, ...] = ()
    body_conflicts: tuple[ConflictRegion, ...] = ()

    @property
    def ok(self) -> bool:
        return self.note is not None


def _pick(base: T, ours: T, theirs: T) -> tuple[bool, T]:
    if ours in (base, theirs):
        return True, theirs
    if theirs == base:
        return True, ours
    return False, ours


def merge_tags(
    base: tuple[str, ...], ours: tuple[str, ...], theirs: tuple[str, ...]
) -> tuple[str, ...]:
    """Set-wise three-way merge of tag lists."""
    base_set, ours_set, theirs_set = set(base), set(ours), set(theirs)

    def keep(tag: str) -> bool:
        in_ours, in_theirs = tag in ours_set, tag in theirs_set
        if tag in base_set:
            return in_ours and in_theirs
        return in_ours or in_theirs

    return tuple(dict.fromkeys(tag for tag in (*ours, *theirs) if keep(tag)))


def _merge_extra(
    base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any]
) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for key in dict.fromkeys([*ours, *theirs, *base]):
        _, value = _pick(base.get(key, _ABSENT), ours.get(key, _ABSENT), theirs.get(key, _ABSENT))
        if value is not _ABSENT:
            merged[key] = value
    return merged


def merge_notes(
    base: Note, ours: Note, theirs: Note, *, now: int, max_body_bytes: int
) -> NoteMerge:
    """Merge two versions of one note that both changed since ``base``."""
    conflicts: list[str] = []
    summary_ok, summary = _pick(base.summary, ours.summary, theirs.summary)
    type_ok, note_type = _pick(base.type, ours.type, theirs.type)
    if not summary_ok:
        conflicts.append("summary")
    if not type_ok:
        conflicts.append("type")
    body = merge_text(base.body, ours.body, theirs.body)
    if not body.ok:
        conflicts.append("body")
    elif body.text is not None and len(body.text.encode("utf-8")) > max_body_bytes:
        conflicts.append("size")
    if conflicts:
        return NoteMerge(None, tuple(conflicts), body.conflicts)
    assert body.text is not None
    merged = Note(
        id=ours.id,
        summary=summary,
        body=body.text,
        tags=merge_tags(base.tags, ours.tags, theirs.tags),
        type=note_type,
        created_at=min(ours.created_at, theirs.created_at),
        updated_at=now,
        extra=_merge_extra(base.extra, ours.extra, theirs.extra),
    )
    return NoteMerge(merged)
