"""What the extractor is shown: the existing notes most related to the conversation.

The recall scorer's search path (``memory(query)``: no gate, no threshold) ranks the notes of
both scopes against the conversation text. The best few come with their full body, as long as
they fit the body budget: only those may be updated. The next ones are listed by summary, so
new notes can link to them. A note whose body holds something that looks like a credential
(written by hand: ``remember`` refuses them) is only listed: the model would see it redacted,
and an update would write the redaction over the person's text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from oharness.memory.memory_service import MemoryService
from oharness.notes.secrets import find_secrets
from oharness.notes.store import StoredNote
from oharness.types import Scope

log = logging.getLogger(__name__)

#: The search reads at most this much of the conversation (its end) as the query.
QUERY_CHARS: Final = 8000

NoteRef = tuple[Scope, str]


@dataclass(frozen=True)
class ShownNotes:
    """The notes in the prompt: ``full`` (body shown, updatable) and ``listed`` (summary only)."""

    full: tuple[StoredNote, ...] = ()
    listed: tuple[StoredNote, ...] = ()

    def updatable(self, note_id: str) -> StoredNote | None:
        """The full-body note with this id (project first), None when it was not shown so."""
        return next((stored for stored in self.full if stored.id == note_id), None)

    def shown_ids(self) -> frozenset[str]:
        """Every id the model saw, with or without its body."""
        return frozenset(stored.id for stored in (*self.full, *self.listed))

    def all(self) -> tuple[StoredNote, ...]:
        return (*self.full, *self.listed)


def _rendered_size(stored: StoredNote) -> int:
    note = stored.note
    return len(note.summary) + len(note.body) + sum(len(tag) + 2 for tag in note.tags) + 80


def _candidates(service: MemoryService, query: str, limit: int) -> list[StoredNote]:
    recall = service.recall
    if recall is None or not query.strip():
        return []
    try:
        hits = recall.search(query[-QUERY_CHARS:], limit)
    except Exception:  # a broken index costs the pass its context, never the pass itself
        log.exception("extraction: related notes could not be searched; none are shown")
        return []
    found = []
    for hit in hits:
        stored = recall.stored((hit.scope, hit.id))
        if stored is not None:
            found.append(stored)
    return found


def select_notes(
    service: MemoryService,
    conversation_text: str,
    *,
    full_notes: int,
    full_chars: int,
    listed_notes: int,
) -> ShownNotes:
    """The notes most related to the conversation: a few in full within ``full_chars``."""
    ranked = _candidates(service, conversation_text, full_notes + listed_notes)
    full: list[StoredNote] = []
    listed: list[StoredNote] = []
    used = 0
    for stored in ranked:
        size = _rendered_size(stored)
        if (
            len(full) < full_notes
            and used + size <= full_chars
            and not _same_id(full, stored)
            and not find_secrets({"body": stored.note.body})
        ):
            full.append(stored)
            used += size
        elif len(listed) < listed_notes:
            listed.append(stored)
    return ShownNotes(tuple(full), tuple(listed))


def _same_id(notes: Iterable[StoredNote], stored: StoredNote) -> bool:
    """An id present in both scopes is shown in full once: an update must name one note."""
    return any(other.id == stored.id for other in notes)
