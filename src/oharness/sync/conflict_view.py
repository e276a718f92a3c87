"""A conflict as a person compares it (spec 07.3, 11): three versions, a line diff, a merge try.

:func:`conflict_view` turns an open :class:`~oharness.sync.conflicts.ConflictRecord` into what
the Memory page (or any other front end) shows: the last synced version, this machine's and the
cloud's; summary, type and tags side by side with what each side changed since the last sync; a
side-by-side line diff of the two bodies, each line marked when it is new since the last sync;
and a merge attempt to pre-fill "merge by hand": everything that merges cleanly merged (the
rules of :func:`oharness.merge.note.merge_notes`), a summary or type changed differently on both
sides taken from this machine (and named), and conflicting body lines left between markers.

:func:`hand_merged_text` is the other way: the fields a person edited, checked like
``remember`` (summary, type, tags, body size, no credentials, no markers left), as the note text
``resolve_conflict(text=...)`` saves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Final, Literal

from oharness.errors import NoteFormatError, OHarnessError, ValidationError
from oharness.merge.note import merge_tags
from oharness.merge.text import merge_text_marked
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.ids import clean_tags
from oharness.notes.store import NoteStore
from oharness.sync.conflicts import ConflictRecord
from oharness.sync.resolve import check_like_remember
from oharness.types import Scope

#: The labels of the two sides in a merge attempt's markers.
LOCAL_LABEL: Final = "this machine"
CLOUD_LABEL: Final = "cloud"
MARKERS: Final = (f"<<<<<<< {LOCAL_LABEL}", "=======", f">>>>>>> {CLOUD_LABEL}")
FieldName = Literal["summary", "type", "tags"]
RowKind = Literal["same", "changed", "local-only", "cloud-only"]


@dataclass(frozen=True)
class Version:
    """One side of a conflict: the note, or why there is none (deleted, unreadable)."""

    note: Note | None
    missing: Literal["deleted", "unreadable"] | None = None

    @classmethod
    def of(cls, text: str | bytes | None) -> Version:
        if text is None:
            return cls(None, "deleted")
        try:
            data = text.encode("utf-8") if isinstance(text, str) else text
            return cls(parse_note_bytes(data))
        except (NoteFormatError, UnicodeError):
            return cls(None, "unreadable")

    def field(self, name: FieldName) -> str:
        """A field as text (tags comma-separated; empty when there is no note)."""
        if self.note is None:
            return ""
        if name == "tags":
            return ", ".join(self.note.tags)
        return getattr(self.note, name) or ""

    @property
    def lines(self) -> list[str]:
        return self.note.body.splitlines() if self.note is not None else []


@dataclass(frozen=True)
class FieldRow:
    """Summary, type or tags on the three versions; what each side changed since the base."""

    name: FieldName
    base: str
    local: str
    cloud: str

    @property
    def local_changed(self) -> bool:
        return self.local != self.base

    @property
    def cloud_changed(self) -> bool:
        return self.cloud != self.base

    @property
    def differs(self) -> bool:
        return self.local != self.cloud


@dataclass(frozen=True)
class DiffRow:
    """One row of the side-by-side body diff (line numbers 1-based; ``None``: no line)."""

    kind: RowKind
    local_no: int | None
    local: str | None
    cloud_no: int | None
    cloud: str | None
    #: The line is not in the last synced version (this side changed it).
    local_new: bool = False
    cloud_new: bool = False


@dataclass(frozen=True)
class MergeAttempt:
    """What "merge by hand" starts from; ``open`` lists what still needs the person."""

    summary: str
    type: str | None
    tags: tuple[str, ...]
    body: str
    open: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.open


@dataclass(frozen=True)
class ConflictView:
    """Everything shown for one open conflict."""

    scope: Scope
    id: str
    reason: str
    created_at: int
    base: Version
    local: Version
    cloud: Version
    fields: tuple[FieldRow, ...]
    rows: tuple[DiffRow, ...]
    attempt: MergeAttempt

    @property
    def summary(self) -> str:
        """A title for the conflict: this machine's summary, else the cloud's, else the id."""
        for version in (self.local, self.cloud, self.base):
            if version.note is not None:
                return version.note.summary
        return self.id


def _matched(lines: Sequence[str], base: Sequence[str]) -> set[int]:
    """Indexes of ``lines`` that are unchanged from ``base``."""
    matcher = SequenceMatcher(None, base, lines, autojunk=False)
    kept: set[int] = set()
    for block in matcher.get_matching_blocks():
        kept.update(range(block.b, block.b + block.size))
    return kept


def body_rows(base: Sequence[str], local: Sequence[str], cloud: Sequence[str]) -> list[DiffRow]:
    """The side-by-side diff of this machine's body (left) and the cloud's (right)."""
    local_kept, cloud_kept = _matched(local, base), _matched(cloud, base)
    rows: list[DiffRow] = []

    def row(kind: RowKind, i: int | None, j: int | None) -> DiffRow:
        return DiffRow(
            kind,
            None if i is None else i + 1,
            None if i is None else local[i],
            None if j is None else j + 1,
            None if j is None else cloud[j],
            local_new=i is not None and i not in local_kept,
            cloud_new=j is not None and j not in cloud_kept,
        )

    matcher = SequenceMatcher(None, local, cloud, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(row("same", i1 + k, j1 + k) for k in range(i2 - i1))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i = i1 + k if i1 + k < i2 else None
            j = j1 + k if j1 + k < j2 else None
            kind: RowKind = (
                "changed"
                if i is not None and j is not None
                else ("local-only" if i is not None else "cloud-only")
            )
            rows.append(row(kind, i, j))
    return rows


def _pick(base: str | None, local: str | None, cloud: str | None) -> tuple[bool, str | None]:
    if local in (base, cloud):
        return True, cloud
    if cloud == base:
        return True, local
    return False, local


def merge_attempt(base: Version, local: Version, cloud: Version) -> MergeAttempt:
    """The clean parts merged, the rest left for the person (see the module notes)."""
    ours, theirs = local.note or cloud.note, cloud.note or local.note
    if ours is None or theirs is None:  # both sides gone or unreadable: start from the base
        start = base.note
        if start is None:
            return MergeAttempt("", None, (), "", ("summary", "body"))
        return MergeAttempt(start.summary, start.type, start.tags, start.body, ("body",))
    if local.note is None or cloud.note is None:  # one side deleted: keep the other's text
        return MergeAttempt(ours.summary, ours.type, ours.tags, ours.body, ("deleted",))
    root = base.note
    open_fields: list[str] = []
    summary_ok, summary = _pick(root.summary if root else None, ours.summary, theirs.summary)
    type_ok, note_type = _pick(root.type if root else None, ours.type, theirs.type)
    if not summary_ok:
        open_fields.append("summary")
    if not type_ok:
        open_fields.append("type")
    tags = merge_tags(root.tags if root else (), ours.tags, theirs.tags)
    body = merge_text_marked(
        root.body if root else "", ours.body, theirs.body, (LOCAL_LABEL, CLOUD_LABEL)
    )
    if not body.ok:
        open_fields.append("body")
    return MergeAttempt(
        summary or ours.summary, note_type, tags, body.text or "", tuple(open_fields)
    )


def conflict_view(record: ConflictRecord, scope: Scope, store: NoteStore) -> ConflictView:
    """The view of one conflict; "this machine's" is the note file as it is now."""
    local = Version(None, "deleted")
    if store.get(record.id) is not None:
        try:
            local = Version.of(store.read_bytes(record.id))
        except OHarnessError:  # removed or unreadable since the listing
            local = Version(None, "unreadable")
    base, cloud = Version.of(record.base), Version.of(record.cloud)
    if record.base is None:
        base = Version(None, None)  # never synced: nothing to compare with
    fields = tuple(
        FieldRow(name, base.field(name), local.field(name), cloud.field(name))
        for name in ("summary", "type", "tags")
    )
    return ConflictView(
        scope=scope,
        id=record.id,
        reason=record.reason,
        created_at=record.created_at,
        base=base,
        local=local,
        cloud=cloud,
        fields=fields,
        rows=tuple(body_rows(base.lines, local.lines, cloud.lines)),
        attempt=merge_attempt(base, local, cloud),
    )


def hand_merged_text(
    view: ConflictView,
    *,
    summary: str,
    type: str | None,
    tags: str,
    body: str,
    max_note_bytes: int,
) -> str:
    """The note file a hand merge saves: the fields checked as ``remember`` checks them.

    Refusals name the field (``ValidationError.details["field"]``); nothing is saved.
    """
    template = view.local.note or view.cloud.note or view.base.note
    if template is None:
        template = Note(view.id, summary, body, created_at=view.created_at)
    note = template.with_changes(
        summary=summary, type=type or None, tags=clean_tags(tags), body=body
    )
    note = check_like_remember(note, max_note_bytes)
    # The ======= line alone is also a Markdown heading underline: only the ends count.
    if any(line.rstrip() in (MARKERS[0], MARKERS[2]) for line in note.body.splitlines()):
        raise ValidationError(
            "the body still holds conflict markers (<<<<<<< / ======= / >>>>>>>): choose between "
            "the two versions and remove the marker lines",
            field="body",
            reason="conflict_markers",
        )
    return serialise_note_bytes(note).decode("utf-8")
