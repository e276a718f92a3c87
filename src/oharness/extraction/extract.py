"""One extraction pass: conversation in, notes written (or described, in a dry run), report out.

Request budget: **one model request per pass**, never retried. Its prompt holds the memory
guidance, at most ``full_notes`` notes in full within ``full_chars`` characters, at most
``listed_notes`` more by summary, and at most ``conversation_chars`` characters of the
conversation (the newest part of the stretch when it is longer); the answer is limited to
``max_tokens`` tokens and the call to ``timeout_s`` seconds. A failed call (timeout, HTTP 429 or
any other refusal) raises and nothing is written; so does an answer with no JSON object in it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from oharness.extraction.conversation import Turn, count_user_turns, render_conversation
from oharness.extraction.parse import Dropped, parse_answer
from oharness.extraction.plan import Similarity, plan_batch
from oharness.extraction.prompt import ExtractionRequest, build_request
from oharness.extraction.shown_notes import ShownNotes, select_notes
from oharness.extraction.writer import SavedNote, apply_plan
from oharness.memory.memory_service import MemoryService

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S: Final = 60.0


class ExtractionModel(Protocol):
    """The model an extraction pass asks (the harness adapts its small model to this)."""

    @property
    def name(self) -> str: ...

    def answer(self, request: ExtractionRequest) -> str | bytes:
        """The model's raw answer text (raises an ``OHarnessError`` when the call fails)."""
        ...


@dataclass(frozen=True)
class ExtractionOptions:
    """The size limits of one pass (see the module notes)."""

    full_notes: int = 5
    full_chars: int = 12_000
    listed_notes: int = 20
    conversation_chars: int = 40_000
    max_new: int = 10
    max_updates: int = 5
    max_tokens: int = 4096
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_note_bytes: int = 131_072


@dataclass
class ExtractionReport:
    """What a pass did: the notes written, the entries dropped and why."""

    model: str
    dry_run: bool = False
    saved: list[SavedNote] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    ignored_keys: list[str] = field(default_factory=list)
    shown_full: list[str] = field(default_factory=list)
    shown_listed: list[str] = field(default_factory=list)
    turns_read: int = 0
    turns_left_out: int = 0
    asked: bool = False

    @property
    def written(self) -> list[SavedNote]:
        """The notes created or changed (what is announced)."""
        return [note for note in self.saved if note.saved]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "dryRun": self.dry_run,
            "asked": self.asked,
            "saved": [note.to_dict() for note in self.saved],
            "dropped": [item.to_dict() for item in self.dropped],
            "ignoredKeys": list(self.ignored_keys),
            "shown": {"full": list(self.shown_full), "listed": list(self.shown_listed)},
            "turns": {"read": self.turns_read, "leftOut": self.turns_left_out},
        }


def _similarity(service: MemoryService) -> Similarity | None:
    recall = service.recall
    if recall is None:
        return None
    try:
        return recall.index().similarity
    except Exception:
        log.exception("extraction: the recall index is unavailable; duplicates are not merged")
        return None


def _log_drops(report: ExtractionReport) -> None:
    for item in report.dropped[:20]:
        log.warning("extraction: %s dropped: %s", item.entry, item.reason)
    if len(report.dropped) > 20:
        log.warning("extraction: %d more entries dropped", len(report.dropped) - 20)
    if report.ignored_keys:
        shown = ", ".join(sorted(report.ignored_keys)[:10])
        log.info("extraction: unknown keys ignored: %s", shown)


def run_extraction(
    turns: Sequence[Turn],
    service: MemoryService,
    model: ExtractionModel,
    options: ExtractionOptions | None = None,
    *,
    dry_run: bool = False,
) -> ExtractionReport:
    """Read ``turns`` with ``model`` and write what it proposes, by the rules of this package."""
    options = options or ExtractionOptions()
    report = ExtractionReport(model.name, dry_run)
    conversation = render_conversation(turns, options.conversation_chars)
    report.turns_read, report.turns_left_out = conversation.shown, conversation.left_out
    if conversation.empty or count_user_turns(turns) + _assistant_turns(turns) == 0:
        return report
    shown: ShownNotes = select_notes(
        service,
        conversation.text,
        full_notes=options.full_notes,
        full_chars=options.full_chars,
        listed_notes=options.listed_notes,
    )
    report.shown_full = [stored.id for stored in shown.full]
    report.shown_listed = [stored.id for stored in shown.listed]
    request = build_request(
        shown, conversation.text, max_tokens=options.max_tokens, timeout_s=options.timeout_s
    )
    report.asked = True
    raw = model.answer(request)
    parsed = parse_answer(
        raw,
        max_body_bytes=options.max_note_bytes,
        max_new=options.max_new,
        max_updates=options.max_updates,
    )
    plan = plan_batch(parsed, shown, _similarity(service))
    applied = apply_plan(plan, service, dry_run=dry_run)
    report.saved, report.dropped = applied.saved, applied.dropped
    report.ignored_keys = sorted(parsed.ignored_keys)
    _log_drops(report)
    return report


def _assistant_turns(turns: Sequence[Turn]) -> int:
    return sum(1 for turn in turns if turn.role == "assistant" and turn.text.strip())
