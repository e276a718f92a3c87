"""The capture pass behind the hooks: in a detached ``oharness hook capture-run JOB`` process,
or in the daemon as a ``capture`` task (:class:`WorkspaceCapturer`).

The model is the one ``oharness chat`` extracts with (``models.small``, else ``models.main``;
credentials from the environment). The settings are read again here, so a config switched
off after the hook ran is obeyed.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from oharness.capture.cursor import CaptureState
from oharness.capture.extraction_pass import CaptureJob, CaptureResult, run_capture
from oharness.extraction import ExtractionOptions
from oharness.harness.model import ChatModel
from oharness.memory.workspace import Workspace
from oharness.settings import ModelSettings, Settings

log = logging.getLogger(__name__)


def extraction_model(models: ModelSettings) -> ChatModel | None:
    """The small model, else the main one; None when neither is configured."""
    from oharness.cli.chat_run import provider_environment
    from oharness.harness.providers import create_model, parse_model_spec

    if models.small:
        spec = parse_model_spec(models.small, source="models.small")
    elif models.main:
        spec = parse_model_spec(models.main, source="models.main")
    else:
        return None
    return create_model(spec, provider_environment())


def _switched_on(job: CaptureJob, settings: Settings) -> bool:
    auto = settings.memory.auto_extract
    return auto.on_compaction or auto.on_stop if job.event == "pre-compact" else auto.on_stop


def current_settings(workspace: Workspace) -> Settings:
    """The workspace's settings as the config files say now (a daemon's workspace may have
    been opened days ago; a capture switched off since must stay off)."""
    from oharness.project.config import load_settings

    project = workspace.project
    root = project.root if project is not None and project.refused is None else None
    return load_settings(workspace.home.config_file, root)


def capture_in_workspace(
    workspace: Workspace, job: CaptureJob, via: str = "process"
) -> CaptureResult:
    """One pass for ``job`` over the workspace's notes (``off`` when config says no)."""
    settings = current_settings(workspace)
    if not _switched_on(job, settings):
        return CaptureResult("off")
    model = extraction_model(settings.models)
    if model is None:
        return CaptureResult("off")
    from oharness.harness.extraction_trigger import ChatExtractionModel

    try:
        return run_capture(
            job,
            workspace.service,
            ChatExtractionModel(model),
            settings.memory.auto_extract,
            CaptureState(workspace.home.home),
            ExtractionOptions(max_note_bytes=settings.memory.max_note_bytes),
            via=via,
        )
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()


class WorkspaceCapturer:
    """The daemon's capture work: the task payload is the job's JSON."""

    def capture(self, workspace: Workspace, payload: str) -> tuple[dict[str, Any], list[str]]:
        """``(result, scopes written)``; ``TaskFailure`` for a job of another project."""
        from oharness.daemon.errors import TaskFailure

        job = CaptureJob.from_dict(json.loads(payload))
        project = workspace.project
        if project is None or Path(job.project_root).resolve() != project.root.resolve():
            raise TaskFailure(
                "capture_failed",
                f"the capture job names project {job.project_root}, not this workspace's; post "
                "it to the workspace of that project",
            )
        result = capture_in_workspace(workspace, job, "daemon")
        scopes = sorted({str(note.get("scope")) for note in result.saved})
        return result.to_dict(), scopes


def run_capture_command(home: str, job_text: str) -> int:
    """``oharness hook capture-run JOB``: 0, or 1 with the reason in the hook log."""
    from oharness.cli.hook_log import log_failure
    from oharness.memory.workspace import open_workspace

    try:
        job = CaptureJob.from_dict(json.loads(job_text))
    except ValueError as exc:
        log_failure(home, "capture-run", f"not a capture job: {exc}")
        return 1
    try:
        workspace = open_workspace(Path(job.project_root), Path(home), register=False)
        try:
            result = capture_in_workspace(workspace, job)
        finally:
            workspace.close()
    except Exception as exc:  # detached: the log is the only place anyone will see it
        reason = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
        log_failure(
            home, job.event, f"capture of session {job.session_id} failed: {reason}", job.agent
        )
        return 1
    if result.outcome == "failed":
        log_failure(home, job.event, f"capture gave up: {result.error}", job.agent)
    return 0
