"""Automatic extraction (spec 04): the small model reads a stretch of a conversation and
proposes notes, which are written under untrusted-output rules.

- :func:`run_extraction` — one pass (one model request) over :class:`Turn` values;
- :class:`ExtractionModel` — what a pass needs of a model (the harness adapts its own);
- :class:`ExtractionOptions` — the size limits of a pass; :class:`ExtractionReport` — its result;
- :class:`Announcement` — "saved N memories from this conversation", for every interface.

This package knows nothing of the harness: the triggers (run stop, compaction) live in
:mod:`oharness.harness.extraction_trigger`. See docs/extraction.md.

Modules: ``extract`` (one pass), ``conversation`` (what a pass reads), ``shown_notes`` (the
notes it is shown), ``prompt``, ``parse`` (the answer, as untrusted input), ``plan`` (what the
model may touch, pure), ``writer`` (the plan written through the memory service), ``announce``.
"""

from oharness.extraction.announce import EVENT_KIND, AnnouncedNote, Announcement
from oharness.extraction.conversation import Turn, count_user_turns, render_conversation
from oharness.extraction.extract import (
    ExtractionModel,
    ExtractionOptions,
    ExtractionReport,
    run_extraction,
)
from oharness.extraction.parse import Dropped, parse_answer
from oharness.extraction.prompt import SYSTEM, ExtractionRequest
from oharness.extraction.writer import BACKUP_REASON, SavedNote

__all__ = [
    "BACKUP_REASON",
    "EVENT_KIND",
    "SYSTEM",
    "AnnouncedNote",
    "Announcement",
    "Dropped",
    "ExtractionModel",
    "ExtractionOptions",
    "ExtractionReport",
    "ExtractionRequest",
    "SavedNote",
    "Turn",
    "count_user_turns",
    "parse_answer",
    "render_conversation",
    "run_extraction",
]
