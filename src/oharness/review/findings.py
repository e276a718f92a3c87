"""The review list of one scope (spec 05.1), as a pure function of its notes.

Five kinds of finding, computed without a model:

- ``same-topic``: 2–6 notes whose summaries and tags largely overlap (:mod:`.topics`);
  actions ``merge`` and ``dismiss``;
- ``broken-link``: a ``[[id]]`` naming no note in either scope;
- ``missing-file``: a project note naming a relative path that does not exist in the project
  (the rule is in :mod:`.missing_paths`);
- ``unused``: neither recalled on this machine nor changed for ``memory.consolidate.unusedDays``
  days (a note never recalled counts from its last change);
- ``too-long``: a body over :data:`TOO_LONG_CHARS` characters.

The last four offer ``open`` and ``dismiss``. A finding's id is stable: it is derived from the
scope key, the kind and what the finding is about (the notes, the link target, the path), never
from the notes' content, so the same problem keeps its id after an edit while its ``hashes``
(the content hashes of the notes involved) change — which is what dismissals compare.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from oharness.notes.format import Note
from oharness.notes.links import LinkIndex, extract_links
from oharness.review.missing_paths import missing_paths
from oharness.review.topics import SAME_TOPIC, same_topic_groups
from oharness.types import Scope

FindingKind = Literal["same-topic", "broken-link", "missing-file", "unused", "too-long"]
FINDING_KINDS: Final[tuple[FindingKind, ...]] = (
    "same-topic",
    "broken-link",
    "missing-file",
    "unused",
    "too-long",
)
TOO_LONG_CHARS: Final = 8000
DAY_MS: Final = 86_400_000
_MERGE_ACTIONS: Final = ("merge", "dismiss")
_OPEN_ACTIONS: Final = ("open", "dismiss")


@dataclass(frozen=True)
class Finding:
    """One entry of the review list."""

    id: str
    kind: FindingKind
    scope: Scope
    notes: tuple[str, ...]
    hashes: tuple[str, ...]
    message: str
    actions: tuple[str, ...]
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (``--json``, the daemon, the page)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "scope": self.scope,
            "notes": list(self.notes),
            "hashes": list(self.hashes),
            "message": self.message,
            "actions": list(self.actions),
            **dict(self.detail),
        }


@dataclass(frozen=True)
class ScopeNotes:
    """What the review of one scope reads: its notes and what surrounds them.

    ``terms`` holds each note's summary + tag terms, aligned with ``notes``; ``known_ids`` the
    ids of every note in either scope; ``last_recalled`` when a note was last recalled here;
    ``path_exists`` answers for a path relative to the project root (``None``: not a project
    scope, so no missing-file findings).
    """

    scope: Scope
    scope_key: str
    notes: Sequence[Note]
    terms: Sequence[frozenset[str]]
    known_ids: Collection[str]
    last_recalled: Mapping[str, int]
    now: int
    unused_days: int = 90
    path_exists: Callable[[str], bool] | None = None
    threshold: float = SAME_TOPIC
    #: The content hash of a note, when the caller keeps them (else computed).
    hash_lookup: Callable[[Note], str] | None = None
    #: What links name in both scopes (ids, stems, summaries); None: ids alone (``known_ids``).
    link_index: LinkIndex | None = None

    def names_a_note(self, target: str) -> bool:
        """Whether a ``[[target]]`` names a note (notes/links.py's rule when an index is given)."""
        if target in self.known_ids:
            return True
        return self.link_index is not None and self.link_index.resolve(target).id is not None

    def hash_of(self, note: Note) -> str:
        """The note's content hash."""
        return self.hash_lookup(note) if self.hash_lookup is not None else note.content_hash


def finding_id(scope_key: str, kind: str, subject: Sequence[str]) -> str:
    """``<kind>-<12 hex>``: stable for the same scope, kind and subject."""
    text = "\x1f".join((scope_key, kind, *subject))
    return f"{kind}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def _finding(
    data: ScopeNotes,
    kind: FindingKind,
    notes: Sequence[Note],
    subject: Sequence[str],
    message: str,
    **detail: Any,
) -> Finding:
    ids = tuple(note.id for note in notes)
    return Finding(
        id=finding_id(data.scope_key, kind, (*ids, *subject)),
        kind=kind,
        scope=data.scope,
        notes=ids,
        hashes=tuple(data.hash_of(note) for note in notes),
        message=message,
        actions=_MERGE_ACTIONS if kind == "same-topic" else _OPEN_ACTIONS,
        detail=detail,
    )


def same_topic_findings(data: ScopeNotes) -> list[Finding]:
    """The same-topic groups of a scope (the costly part: callers may cache it per version)."""
    found = []
    for group in same_topic_groups(data.terms, data.threshold):
        members = sorted((data.notes[i] for i in group.members), key=lambda n: n.id)
        summaries = "; ".join(f"{note.summary} ({note.id})" for note in members)
        found.append(
            _finding(
                data,
                "same-topic",
                members,
                (),
                f"{len(members)} notes on the same topic: {summaries}",
                similarity=round(group.score, 3),
            )
        )
    return found


def _per_note(data: ScopeNotes, note: Note) -> list[Finding]:
    found = []
    for target in extract_links(note.body):
        if not data.names_a_note(target):
            found.append(
                _finding(
                    data,
                    "broken-link",
                    [note],
                    (target,),
                    f"{note.id} links to [[{target}]], which is no note in either scope",
                    target=target,
                )
            )
    if data.path_exists is not None:
        for path in missing_paths(note.body, data.path_exists):
            found.append(
                _finding(
                    data,
                    "missing-file",
                    [note],
                    (path,),
                    f"{note.id} names {path}, which does not exist in the project",
                    path=path,
                )
            )
    cutoff = data.now - data.unused_days * DAY_MS
    recalled = data.last_recalled.get(note.id, 0)
    if recalled < cutoff and note.updated_at < cutoff:
        days = (data.now - max(recalled, note.updated_at)) // DAY_MS
        found.append(
            _finding(
                data,
                "unused",
                [note],
                (),
                f"{note.id} was neither recalled nor changed for {days} days",
                lastRecalledAt=recalled or None,
                updatedAt=note.updated_at,
            )
        )
    if len(note.body) > TOO_LONG_CHARS:
        found.append(
            _finding(
                data,
                "too-long",
                [note],
                (),
                f"{note.id} has a body of {len(note.body)} characters (over {TOO_LONG_CHARS}); "
                "split or shorten it",
                chars=len(note.body),
            )
        )
    return found


def note_findings(data: ScopeNotes) -> list[Finding]:
    """The per-note findings of a scope (links, files, use, length), in id order."""
    found = []
    for note in sorted(data.notes, key=lambda n: n.id):
        found.extend(_per_note(data, note))
    return found


def review_notes(data: ScopeNotes) -> list[Finding]:
    """Every finding of one scope: same-topic groups first, then per note in id order."""
    if len(data.terms) != len(data.notes):
        raise ValueError("terms must be aligned with notes")
    return same_topic_findings(data) + note_findings(data)
