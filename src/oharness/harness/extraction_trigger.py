"""When extraction runs (spec 04): at the end of a run and before compaction drops a stretch.

The memory plugin installs an :class:`ExtractionTrigger` through the public plugin API. With
``memory.autoExtract.onStop``, a run that ended hands the messages since the last pass to the
small model once they hold at least ``minUserTurns`` real user messages (tool results and
recalled blocks are not user messages). With ``onCompaction`` (or ``onStop``), the stretch a
compaction is about to drop is handed over first, however short, unless a pass read it already.

- **Cursor.** Session metadata ``extraction`` (kept in the transcript) records ``cursor``: the
  sequence number of the last message a pass has read (``12`` for ``m12``). A session first
  seen on resume with no cursor starts counting at the message it was resumed from.
- **When.** Passes run on a background thread after the run that started them has ended (a
  stretch captured during a run's compaction waits for the run to end), so a reply is never
  delayed. At most one pass per session is in flight; what comes meanwhile is merged into one
  queued pass. Closing the harness waits for a pass in flight, up to its timeout.
- **Cost guard.** One request per pass, never retried: a timeout, an HTTP 429 or an answer
  with no JSON is logged and the stretch is given up (the cursor moves past it).
- **Announcement.** What a pass saved is kept in the metadata (``pending``) and announced at
  the start of the next run as a ``memory.extracted`` event (see
  :class:`~oharness.extraction.announce.Announcement`).
- Subagent sessions are never read; a repository config can only switch extraction off.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from oharness.errors import OHarnessError
from oharness.extraction import (
    EVENT_KIND,
    Announcement,
    ExtractionOptions,
    ExtractionReport,
    ExtractionRequest,
    Turn,
    count_user_turns,
    run_extraction,
)
from oharness.harness.compaction import is_summary
from oharness.harness.message import Message
from oharness.harness.model import CancelToken, ChatModel, ModelCancelled, ModelRequest
from oharness.harness.plugin import (
    CompactionContext,
    HarnessEnvironment,
    PluginApi,
    ResumeContext,
    RunContext,
    RunStopContext,
)
from oharness.harness.session import Session
from oharness.harness.transcript import message_sequence
from oharness.memory.memory_service import MemoryService
from oharness.settings import AutoExtractSettings
from oharness.types import Scope

log = logging.getLogger(__name__)

METADATA_KEY: Final = "extraction"
_CLOSE_GRACE_S: Final = 5.0


class ChatExtractionModel:
    """A harness model as an extraction model: one request, the raw answer text."""

    def __init__(self, model: ChatModel, cancel: CancelToken | None = None) -> None:
        self.model = model
        self.cancel = cancel

    @property
    def name(self) -> str:
        return self.model.name

    def answer(self, request: ExtractionRequest) -> str:
        """Ask once (raises :class:`~oharness.harness.model.ModelError`)."""
        reply = self.model.complete(
            ModelRequest(
                system=request.system,
                messages=(Message("extract-1", "user", request.prompt),),
                max_tokens=request.max_tokens,
                timeout_s=request.timeout_s,
            ),
            cancel=self.cancel,
        )
        return reply.text


def turns_of(messages: Iterable[Message]) -> list[Turn]:
    """Messages as extraction turns: the user's own words (attachments left out), assistant
    text and tool calls, tool results; compaction summaries are not part of any stretch."""
    turns = []
    for message in messages:
        if is_summary(message):
            continue
        calls = tuple(f"{call.name}({call.arguments_text()})" for call in message.tool_calls)
        turns.append(
            Turn(
                message_sequence(message.id),
                message.role,
                message.text,
                tool_name=message.tool_name,
                is_error=message.is_error,
                calls=calls,
            )
        )
    return turns


@dataclass
class _Job:
    turns: list[Turn]
    through: int
    reasons: set[str]

    def merge(self, other: _Job) -> None:
        seen = {turn.sequence for turn in self.turns}
        self.turns.extend(turn for turn in other.turns if turn.sequence not in seen)
        self.turns.sort(key=lambda turn: turn.sequence)
        self.through = max(self.through, other.through)
        self.reasons |= other.reasons


@dataclass
class _Slot:
    """One session's extraction state in this process."""

    session: Session
    claimed: int
    running: bool = False
    queued: _Job | None = None
    worker: threading.Thread | None = None
    cancel: CancelToken = field(default_factory=CancelToken)


def read_state(session: Session) -> dict[str, Any] | None:
    """The ``extraction`` metadata of a session (None when it has none)."""
    state = session.metadata(METADATA_KEY)
    return dict(state) if isinstance(state, dict) else None


def state_cursor(state: dict[str, Any] | None) -> int | None:
    value = state.get("cursor") if state else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def state_pending(state: dict[str, Any] | None) -> list[Any]:
    """The notes saved and not yet announced (an unreadable value counts as none)."""
    value = state.get("pending") if state else None
    return list(value) if isinstance(value, list) else []


def state_passes(state: dict[str, Any] | None) -> int:
    value = state.get("passes") if state else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def last_sequence(messages: Sequence[Message]) -> int:
    return max((message_sequence(message.id) for message in messages), default=0)


class ExtractionTrigger:
    """The run-stop and compaction triggers, and the background passes they start."""

    name = "extraction"

    def __init__(
        self,
        service: MemoryService,
        settings: AutoExtractSettings,
        model: ChatModel | None,
        options: ExtractionOptions | None = None,
        *,
        on_write: Callable[[Scope], None] | None = None,
    ) -> None:
        self.service = service
        self.on_write = on_write  # background sync learns of what a pass wrote
        self.settings = settings
        self.model = model
        self.options = options or ExtractionOptions()
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def enabled(self) -> bool:
        return self.settings.on_stop or self.settings.on_compaction

    def install(self, api: PluginApi) -> None:
        """Register the hooks and the service (nothing when extraction is switched off)."""
        if not self.enabled:
            return
        if self.model is None:
            log.warning("memory.autoExtract is on but no model is configured; nothing is extracted")
            return
        api.on_session_resume(self._resumed)
        api.on_run_start(self._run_started)
        api.on_run_stop(self._run_stopped)
        api.on_before_compaction(self._compacting)
        api.add_service(self)

    # ---- the session's state -------------------------------------------------------------

    def _slot(self, session: Session) -> _Slot:
        with self._lock:
            slot = self._slots.get(session.id)
            if slot is not None:
                return slot
            state = read_state(session)
            cursor = state_cursor(state)
            if cursor is None:
                cursor = last_sequence(session.messages) if session.resumed else 0
                session.set_metadata(METADATA_KEY, {**(state or {}), "cursor": cursor})
            slot = _Slot(session, cursor)
            self._slots[session.id] = slot
            return slot

    def _update_state(self, session: Session, **values: Any) -> dict[str, Any]:
        state = read_state(session) or {}
        state.update(values)
        session.set_metadata(METADATA_KEY, state)
        return state

    # ---- hooks ---------------------------------------------------------------------------

    def _resumed(self, context: ResumeContext) -> None:
        if context.session.subagent:
            return
        with self._lock:
            slot = self._slots.pop(context.session.id, None)
            if slot is not None and (slot.worker is not None or slot.queued is not None):
                slot.session = context.session  # a pass in flight here: still one at a time
                self._slots[context.session.id] = slot
                return
        self._slot(context.session)

    def _run_started(self, context: RunContext) -> None:
        session = context.session
        if session.subagent:
            return
        slot = self._slot(session)
        with self._lock:
            slot.running = True
            pending = state_pending(read_state(session))
            if pending:
                self._update_state(session, pending=[])
        announcement = Announcement.from_dict({"notes": pending})
        if announcement.count:
            context.emit(EVENT_KIND, {**announcement.to_dict(), "text": announcement.text()})

    def _run_stopped(self, context: RunStopContext) -> None:
        session = context.session
        if session.subagent:
            return
        slot = self._slot(session)
        with self._lock:
            slot.running = False
            if self.settings.on_stop and context.outcome in ("done", "max_steps"):
                unread = [t for t in turns_of(session.messages) if t.sequence > slot.claimed]
                if count_user_turns(unread) >= max(self.settings.min_user_turns, 1):
                    self._enqueue(slot, unread, "stop")
            self._start(slot)

    def _compacting(self, context: CompactionContext) -> None:
        session = context.session
        if session.subagent:
            return
        slot = self._slot(session)
        with self._lock:
            stretch = [t for t in turns_of(context.replaced) if t.sequence > slot.claimed]
            if any(turn.role != "tool" and turn.text.strip() for turn in stretch):
                self._enqueue(slot, stretch, "compaction")
            if not slot.running:  # a compaction asked for between runs
                self._start(slot)

    # ---- passes (called with self._lock held) ----------------------------------------------

    def _enqueue(self, slot: _Slot, turns: list[Turn], reason: str) -> None:
        through = max(turn.sequence for turn in turns)
        job = _Job(list(turns), through, {reason})
        slot.claimed = max(slot.claimed, through)
        if slot.queued is None:
            slot.queued = job
        else:
            slot.queued.merge(job)

    def _start(self, slot: _Slot) -> None:
        if self._closed or slot.queued is None or slot.worker is not None:
            return
        slot.worker = threading.Thread(
            target=self._work, args=(slot,), name=f"oharness-extract-{slot.session.id}"
        )
        slot.worker.daemon = True
        slot.worker.start()

    def _work(self, slot: _Slot) -> None:
        while True:
            with self._lock:
                job, slot.queued = slot.queued, None
                if job is None or slot.cancel.cancelled:
                    slot.worker = None  # under the lock: a later trigger starts a new worker
                    return
            try:
                self._pass(slot, job)
            except Exception:  # the worker must survive to clear its slot
                log.exception("extraction of session %s failed", slot.session.id)

    def _pass(self, slot: _Slot, job: _Job) -> None:
        session = slot.session
        assert self.model is not None
        model = ChatExtractionModel(self.model, slot.cancel)
        try:
            report: ExtractionReport | None = run_extraction(
                job.turns, self.service, model, self.options
            )
            outcome, error = "done", None
        except ModelCancelled:
            log.info("extraction of session %s cancelled; the stretch stays unread", session.id)
            return
        except OHarnessError as exc:
            report, outcome, error = None, "failed", exc.message
            log.warning("extraction of session %s gave up: %s", session.id, exc.message)
        except Exception as exc:  # never retried: a broken pass must not cost credit again
            report, outcome, error = None, "failed", f"{type(exc).__name__}: {exc}"
            log.exception("extraction of session %s failed", session.id)
        self._finished(slot, job, report, outcome, error)
        if report is not None and self.on_write is not None:
            for scope in sorted({note.scope for note in report.written}):
                self.on_write(scope)

    def _finished(
        self,
        slot: _Slot,
        job: _Job,
        report: ExtractionReport | None,
        outcome: str,
        error: str | None,
    ) -> None:
        session = slot.session
        with self._lock:
            state = read_state(session) or {}
            pending = state_pending(state)
            if report is not None:
                pending.extend(Announcement.of(report.written).to_dict()["notes"])
            last: dict[str, Any] = {
                "outcome": outcome,
                "reasons": sorted(job.reasons),
                "through": job.through,
                "saved": len(report.written) if report else 0,
                "dropped": len(report.dropped) if report else 0,
            }
            if error is not None:
                last["error"] = error
            try:
                self._update_state(
                    session,
                    cursor=max(state_cursor(state) or 0, job.through),
                    pending=pending,
                    passes=state_passes(state) + 1,
                    last=last,
                )
            except OHarnessError as exc:
                log.warning("extraction state of session %s not saved: %s", session.id, exc)

    # ---- the background service -----------------------------------------------------------

    def start(self) -> None:
        return None

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for every pass in flight or queued; False when some are still running."""
        with self._lock:
            workers = [slot.worker for slot in self._slots.values() if slot.worker is not None]
        for worker in workers:
            worker.join(timeout_s)
        return not any(worker.is_alive() for worker in workers)

    def stop(self) -> None:
        """Let a pass in flight finish (up to its timeout), then cancel what is left."""
        if not self.wait(self.options.timeout_s + _CLOSE_GRACE_S):
            log.warning("an extraction was still running when the harness closed; cancelled")
        with self._lock:
            self._closed = True
            slots = list(self._slots.values())
        for slot in slots:
            slot.cancel.cancel()
        for slot in slots:
            worker = slot.worker
            if worker is not None:
                worker.join(_CLOSE_GRACE_S)


def trigger_for(
    service: MemoryService,
    environment: HarnessEnvironment,
    on_write: Callable[[Scope], None] | None = None,
) -> ExtractionTrigger:
    """The trigger of a harness: its settings, and the small model (else the main one)."""
    models = environment.models
    memory = environment.settings.memory
    return ExtractionTrigger(
        service,
        memory.auto_extract,
        models.summariser if models is not None else None,
        ExtractionOptions(max_note_bytes=memory.max_note_bytes),
        on_write=on_write,
    )
