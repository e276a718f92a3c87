"""The announcement of what extraction saved, shown at the start of the next message.

A value, so every interface says the same: the CLI chat prints :meth:`text`, the daemon can
send :meth:`to_dict` as an event and the Memory page can list it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from oharness.extraction.writer import SavedNote

EVENT_KIND = "memory.extracted"


@dataclass(frozen=True)
class AnnouncedNote:
    id: str
    scope: str
    summary: str
    action: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "scope": self.scope, "summary": self.summary, "action": self.action}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnnouncedNote | None:
        values = [data.get(key) for key in ("id", "scope", "summary", "action")]
        if not all(isinstance(value, str) for value in values):
            return None
        return cls(*(str(value) for value in values))


@dataclass(frozen=True)
class Announcement:
    """ "saved N memories from this conversation", naming the notes."""

    notes: tuple[AnnouncedNote, ...]

    @classmethod
    def of(cls, saved: Iterable[SavedNote]) -> Announcement:
        return cls(
            tuple(
                AnnouncedNote(note.id, note.scope, note.summary, note.action)
                for note in saved
                if note.saved and note.id is not None
            )
        )

    @property
    def count(self) -> int:
        return len(self.notes)

    def text(self, source: str = "this conversation") -> str:
        """One line for people: the count, then each note's summary and id."""
        word = "memory" if self.count == 1 else "memories"
        named = "; ".join(
            f"{note.summary} ({'user:' if note.scope == 'user' else ''}{note.id}"
            f"{', updated' if note.action == 'updated' else ''})"
            for note in self.notes
        )
        return f"saved {self.count} {word} from {source}: {named}"

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "notes": [note.to_dict() for note in self.notes]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Announcement:
        notes = data.get("notes") if isinstance(data, Mapping) else None
        found = [AnnouncedNote.from_dict(item) for item in notes or () if isinstance(item, Mapping)]
        # Several passes (Stop, then SessionEnd, another agent) may save one note: once each,
        # where it was first named, with its last summary; created then updated is created.
        once: dict[tuple[str, str], AnnouncedNote] = {}
        for note in (note for note in found if note is not None):
            before = once.get((note.scope, note.id))
            created = before is not None and before.action == "created"
            once[(note.scope, note.id)] = replace(note, action="created") if created else note
        return cls(tuple(once.values()))
