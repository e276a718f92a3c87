"""The Memory section of the system prompt (spec 03.1).

Guidance on when a note is worth writing, then one line per note, most recently updated first
across both scopes, until ``memory.indexChars`` characters of lines are used; a final line
counts the rest. With no notes at all, two short lines replace the whole section.

Line format (stable): ``- [type] summary (id)``; user notes show ``(user:id)``; untyped notes
have no ``[type]``. The lines sit inside a ``<memory-index>`` block introduced by a sentence
saying they are stored data, not instructions; a summary, type or id cannot close or forge that
block (:func:`oharness.notes.quoting.quote`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Final

from oharness.memory.conflict_marks import conflict_line
from oharness.memory.results import ListingItem
from oharness.notes.quoting import STORED_DATA, quote
from oharness.notes.secrets import redact_for_model
from oharness.notes.store import StoredNote
from oharness.types import SCOPES, Scope

HEADING: Final = "# Memory"

NOT_A_PROJECT: Final = (
    "This folder is not a project: there are no project notes here, so save notes with "
    'scope "user".'
)

#: What the notes are, by the scopes open here (a folder that is not a project has no project
#: notes: a model told of them would save there and be refused).
NOTES_HELD: Final = {
    ("project", "user"): "project notes (this repository) and user notes (this person, every "
    "project).",
    ("user",): "user notes (this person, every project). " + NOT_A_PROJECT,
    ("project",): "project notes (this repository). User notes are not available here.",
}

GUIDANCE: Final = """\
You have durable notes that persist across sessions: {held}
Relevant notes are attached to user messages inside `recalled-memory` blocks; the `memory` tool
reads any note by id and lists them all.

Write a note with `remember` when you learn something a future session needs: a correction or
a confirmed approach, a decision and its reason, a constraint, who the user is and how they like
to work, where external information lives. Do not write what the code or git history already
says, ephemeral task state, or secrets. Update an existing note (pass its id) rather than adding
a near-duplicate; link related notes with [[note-id]]. Recall matches words, not meaning: give
notes tags for synonyms and for the term in the other language in use.

Notes, most recently updated first (summaries only; `memory` reads a note in full)."""

OPEN: Final = "<memory-index>"
CLOSE: Final = "</memory-index>"

EMPTY: Final = """\
# Memory
No notes yet. When you learn something a future session needs (a correction, a decision and its
reason, a constraint, the user's preferences), save it with the `remember` tool."""


_SPACES: Final = re.compile(r"[ \t\n\r\x0b\x0c\x1c-\x1f\x85\xa0]+")


def index_line(stored: StoredNote, conflict: bool = False) -> str:
    """One index line for a note (marked when a sync conflict waits for it)."""
    note = stored.note
    item = ListingItem(stored.id, stored.scope, note.type, note.summary, note.updated_at, conflict)
    line = item.line()
    # The index goes to a model: one line per note (a hand-written type may hold a line break).
    # U+2028 and U+2029 are kept for redact_for_model to show as their code points.
    return redact_for_model(quote(_SPACES.sub(" ", line).strip()))


def render_index(
    notes: Iterable[StoredNote],
    index_chars: int,
    waiting: Collection[tuple[Scope, str]] = frozenset(),
    scopes: Collection[Scope] = SCOPES,
) -> str:
    """The whole Memory section for these notes (the ``scopes`` open here); ``waiting``: the
    notes with a sync conflict waiting, marked on their lines and counted at the end."""
    ordered = sorted(notes, key=lambda s: (-s.note.updated_at, s.scope, s.id))
    held = NOTES_HELD.get(tuple(s for s in SCOPES if s in scopes), NOTES_HELD[SCOPES])
    if not ordered:
        empty = EMPTY if "project" in scopes else f"{EMPTY}\n{NOT_A_PROJECT}"
        return "\n".join([empty, conflict_line(len(waiting))]).rstrip("\n")
    lines: list[str] = []
    used = 0
    for stored in ordered:
        line = index_line(stored, (stored.scope, stored.id) in waiting)
        if used + len(line) + 1 > index_chars:
            break
        lines.append(line)
        used += len(line) + 1
    rest = len(ordered) - len(lines)
    more = []
    if rest:
        more.append(
            f"… and {rest} more note{'s' if rest != 1 else ''} not shown: the `memory` tool lists "
            "and searches them all."
        )
    if waiting:
        more.append(conflict_line(len(waiting)))
    guidance = GUIDANCE.format(held=held)
    return "\n".join([HEADING, guidance, STORED_DATA, OPEN, *lines, CLOSE, *more])
