"""One capture pass: a session's unread stretch, spec 04's thresholds, then extraction.

The pass runs in the daemon (a ``capture`` task) or in a detached ``oharness`` process, never
in the hook itself. It holds the project's lock for its whole run, so at most one extraction
writes a project's notes at a time; under the lock it reads the session's cursor, so two
passes queued for one session never read the same stretch twice.

Thresholds (spec 04): ``stop`` needs ``memory.autoExtract.minUserTurns`` real user messages
since the cursor (tool results and recalled blocks are not); ``pre-compact`` takes the stretch
however short (the last chance to read it whole); ``session-end`` needs one user message.
The cursor moves past a stretch that was handed to the model whatever came of it: a failed call
is never retried (spec 04's cost guard). The transcript is read, never copied.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any, Final

import filelock

from oharness.capture.cursor import CaptureState
from oharness.capture.transcript import Entry, read_stretch
from oharness.errors import OHarnessError
from oharness.extraction import (
    Announcement,
    ExtractionModel,
    ExtractionOptions,
    ExtractionReport,
    Turn,
    run_extraction,
)
from oharness.memory.memory_service import MemoryService
from oharness.settings import AutoExtractSettings

log = logging.getLogger(__name__)

AGENTS: Final = ("claude-code", "codex")
EVENTS: Final = ("stop", "pre-compact", "session-end")
LOCK_WAIT_S: Final = 600.0


@dataclass(frozen=True)
class CaptureJob:
    """What a hook hands over: which session, which transcript, which project."""

    agent: str
    event: str
    session_id: str
    transcript_path: str
    project_root: str

    def to_dict(self) -> dict[str, str]:
        return {
            "agent": self.agent,
            "event": self.event,
            "sessionId": self.session_id,
            "transcriptPath": self.transcript_path,
            "projectRoot": self.project_root,
        }

    @classmethod
    def from_dict(cls, data: Any) -> CaptureJob:
        """A job from its JSON form; ``ValueError`` naming the bad field."""
        if not isinstance(data, dict):
            raise ValueError("a capture job is a JSON object")
        values = {}
        for key in ("agent", "event", "sessionId", "transcriptPath", "projectRoot"):
            value = data.get(key)
            if not isinstance(value, str) or not value:
                raise ValueError(f"capture job field {key!r} is missing or not a string")
            values[key] = value
        for key in ("transcriptPath", "projectRoot"):
            if not os.path.isabs(values[key]):
                raise ValueError(f"capture job field {key!r} must be an absolute path")
        if values["agent"] not in AGENTS or values["event"] not in EVENTS:
            raise ValueError(f"capture job names an unknown agent or event: {data!r:.200}")
        return cls(
            values["agent"],
            values["event"],
            values["sessionId"],
            values["transcriptPath"],
            values["projectRoot"],
        )


@dataclass
class CaptureResult:
    """What a pass did: ``outcome`` is ``done``, ``failed``, ``below-threshold``, ``subagent``
    or ``nothing-new``."""

    outcome: str
    user_turns: int = 0
    report: ExtractionReport | None = None
    error: str | None = None
    saved: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"outcome": self.outcome, "userTurns": self.user_turns}
        data["saved"] = list(self.saved)
        if self.report is not None:
            data["dropped"] = [item.to_dict() for item in self.report.dropped]
        if self.error is not None:
            data["error"] = self.error
        return data


def turns_of(entries: list[Entry]) -> list[Turn]:
    """Transcript entries as extraction turns (numbered in order)."""
    return [
        Turn(
            number,
            "user" if entry.role == "user" else "tool" if entry.role == "tool" else "assistant",
            entry.text,
            tool_name=entry.tool_name,
            is_error=entry.is_error,
            calls=entry.calls,
        )
        for number, entry in enumerate(entries, 1)
    ]


def run_capture(
    job: CaptureJob,
    service: MemoryService,
    model: ExtractionModel,
    settings: AutoExtractSettings,
    state: CaptureState,
    options: ExtractionOptions | None = None,
    *,
    lock_wait_s: float = LOCK_WAIT_S,
    via: str = "process",
) -> CaptureResult:
    """Run one pass for ``job`` under the project's lock (``filelock.Timeout`` past the wait);
    ``via`` (``daemon`` or ``process``) is kept in the cursor's ``last``."""
    lock = filelock.FileLock(state.lock_path(job.project_root), timeout=lock_wait_s, mode=0o600)
    with lock:
        return _locked_pass(job, service, model, settings, state, options, via)


def _locked_pass(
    job: CaptureJob,
    service: MemoryService,
    model: ExtractionModel,
    settings: AutoExtractSettings,
    state: CaptureState,
    options: ExtractionOptions | None,
    via: str,
) -> CaptureResult:
    record = state.session(job.agent, job.session_id)
    same_file = record.get("transcript") == job.transcript_path
    offset = record.get("offset") if same_file else 0
    start = offset if isinstance(offset, int) and offset >= 0 else 0
    stretch = read_stretch(job.transcript_path, job.agent, start)
    if stretch.subagent:
        state.save_session(job.agent, job.session_id, {**record, "subagent": True})
        return CaptureResult("subagent")
    user_turns = stretch.user_turns
    if not stretch.entries:
        return CaptureResult("nothing-new")
    if not stretch.enough_for(job.event, settings.min_user_turns):
        return CaptureResult("below-threshold", user_turns)
    result = _extract(job, stretch.entries, service, model, options)
    result.user_turns = user_turns
    last = {"outcome": result.outcome, "event": job.event, "saved": len(result.saved), "via": via}
    if result.error is not None:
        last["error"] = result.error
    passes = record.get("passes")
    state.save_session(
        job.agent,
        job.session_id,
        {
            **record,
            "transcript": job.transcript_path,
            "offset": stretch.end,
            "passes": (passes if isinstance(passes, int) else 0) + 1,
            "last": last,
        },
    )
    state.add_pending(job.project_root, result.saved)
    state.add_recent(job.project_root, job.agent, job.session_id, result.saved)
    return result


def _extract(
    job: CaptureJob,
    entries: list[Entry],
    service: MemoryService,
    model: ExtractionModel,
    options: ExtractionOptions | None,
) -> CaptureResult:
    try:
        report = run_extraction(turns_of(entries), service, model, options)
    except OHarnessError as exc:  # never retried: a broken pass must not cost credit again
        log.warning("capture of %s session %s gave up: %s", job.agent, job.session_id, exc.message)
        return CaptureResult("failed", error=exc.message)
    except Exception as exc:
        log.exception("capture of %s session %s failed", job.agent, job.session_id)
        return CaptureResult("failed", error=f"{type(exc).__name__}: {exc}")
    saved = Announcement.of(report.written).to_dict()["notes"]
    return CaptureResult("done", report=report, saved=saved)
