"""Which notes a listing or a search keeps: by scope, type and tag (spec 11, the CLI, the API).

One definition for ``oharness memory list/search --scope/--type/--tag``, the daemon's
``/workspace/memory/notes`` and ``/workspace/memory/search``; every field left empty keeps
every note. A value that can never match (an unknown scope or type, a tag longer than any tag) is
refused with the fix, so a typo is not mistaken for "no such notes". A tag is compared trimmed
and without regard to case (Unicode case folding: notes store tags ASCII lower-cased only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from oharness.errors import ValidationError
from oharness.notes.store import StoredNote
from oharness.types import NOTE_TYPES, SCOPES

#: The type filter's value for notes without a type.
UNTYPED: Final = "none"
#: The longest tag a filter takes (notes' tags are shorter).
MAX_TAG_CHARS: Final = 100


@dataclass(frozen=True)
class NoteFilter:
    """Keep notes of this scope, type (``"none"``: untyped) and tag; empty keeps all."""

    scope: str = ""
    type: str = ""
    tag: str = ""

    @classmethod
    def of(
        cls, scope: str | None = None, type: str | None = None, tag: str | None = None
    ) -> NoteFilter:
        """A checked filter (``None`` or ``""`` leaves a field open), else ValidationError."""
        scope, type = scope or "", type or ""
        tag = (tag or "").strip().casefold()
        if scope and scope not in SCOPES:
            raise ValidationError(
                f"unknown scope {scope!r}: use project or user, or leave it out", field="scope"
            )
        if type and type not in (*NOTE_TYPES, UNTYPED):
            raise ValidationError(
                f"unknown note type {type!r}: use one of {', '.join(NOTE_TYPES)} or "
                f"{UNTYPED} (notes without a type), or leave it out",
                field="type",
            )
        if len(tag) > MAX_TAG_CHARS:
            raise ValidationError(
                f"the tag filter is {len(tag)} characters; tags are at most {MAX_TAG_CHARS}",
                field="tag",
            )
        return cls(scope, type, tag)

    @property
    def narrows(self) -> bool:
        """Whether any field is set."""
        return bool(self.scope or self.type or self.tag)

    def keeps(self, stored: StoredNote) -> bool:
        """Whether ``stored`` passes every field that is set."""
        note = stored.note
        if self.scope and stored.scope != self.scope:
            return False
        if self.type and (note.type or UNTYPED) != self.type:
            return False
        return not self.tag or any(tag.casefold() == self.tag for tag in note.tags)


#: Keeps every note.
EVERY_NOTE: Final = NoteFilter()
