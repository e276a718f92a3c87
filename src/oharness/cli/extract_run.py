"""The work behind ``oharness memory extract`` (imported only when the command runs)."""

from __future__ import annotations

from collections.abc import Callable

from oharness.errors import ValidationError
from oharness.extraction import ExtractionOptions, ExtractionReport, run_extraction
from oharness.harness.extraction_trigger import (
    METADATA_KEY,
    ChatExtractionModel,
    read_state,
    state_cursor,
    state_passes,
    turns_of,
)
from oharness.harness.model import ChatModel
from oharness.harness.session import Session
from oharness.harness.transcript import TranscriptStore
from oharness.memory.workspace import Workspace, wall_clock_ms


def _open_session(workspace: Workspace, session_id: str) -> Session:
    store = TranscriptStore(workspace.home.sessions_dir)
    project = workspace.project
    project_id = project.identity.id if project is not None and project.identity else None
    loaded = store.load(store.find(session_id, project_id))
    if loaded.header.project_id != project_id:
        where = loaded.header.project_id or "no project"
        raise ValidationError(
            f"session {session_id} belongs to {where}, not to this project; its notes would land "
            "in the wrong place: run the command in that project (or pass --project PATH)",
            field="session",
        )
    if loaded.header.subagent:
        raise ValidationError(
            f"session {session_id} is a subagent's: nothing is extracted from subagents; "
            "extract from its parent session instead",
            field="session",
        )
    return Session.from_transcript(loaded, clock=wall_clock_ms, store=store)


def run_extract(
    workspace: Workspace,
    session_id: str,
    dry_run: bool,
    whole: bool,
    model_for: Callable[[], ChatModel],
) -> tuple[ExtractionReport, bool]:
    """One pass over a saved session: ``(report, nothing_to_read)``.

    The model is made only once the session is found (a wrong id is the error to show).
    """
    session = _open_session(workspace, session_id)
    model = model_for()
    try:
        state = read_state(session) or {}
        cursor = 0 if whole else state_cursor(state) or 0
        turns = [turn for turn in turns_of(session.messages) if turn.sequence > cursor]
        options = ExtractionOptions(max_note_bytes=workspace.settings.memory.max_note_bytes)
        report = run_extraction(
            turns, workspace.service, ChatExtractionModel(model), options, dry_run=dry_run
        )
        if not dry_run and turns:
            through = max(turn.sequence for turn in turns)
            state.update(
                cursor=max(state_cursor(state) or 0, through),
                passes=state_passes(state) + 1,
                last={
                    "outcome": "done",
                    "reasons": ["manual"],
                    "through": through,
                    "saved": len(report.written),
                    "dropped": len(report.dropped),
                },
            )
            session.set_metadata(METADATA_KEY, state)
        return report, not report.asked
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()
