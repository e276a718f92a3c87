"""Small shared vocabulary: scopes, note types, the clock and id-source protocols."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal

Scope = Literal["project", "user"]
SCOPES: Final[tuple[Scope, ...]] = ("project", "user")

NoteType = Literal["user", "feedback", "project", "reference"]
NOTE_TYPES: Final[tuple[NoteType, ...]] = ("user", "feedback", "project", "reference")

#: Milliseconds since the Unix epoch. Injected everywhere time matters, so tests never sleep.
Clock = Callable[[], int]

#: Returns ``n`` random lower-case hex characters. Injected so generated ids are reproducible.
HexSource = Callable[[int], str]


def default_scope_for(note_type: str | None) -> Scope:
    """The scope a note goes to when the caller does not say (spec 01.3)."""
    return "user" if note_type == "user" else "project"


def parse_scope(value: str) -> Scope:
    """Turn a user-supplied string into a scope, or raise a clear error."""
    from oharness.errors import ValidationError

    if value == "project":
        return "project"
    if value == "user":
        return "user"
    raise ValidationError(f"unknown scope {value!r}: use 'project' or 'user'", field="scope")
