"""``oharness memory extract SESSION_ID``: an extraction pass by hand over a saved session.

It reads what no pass has read yet (``--all``: the whole live conversation) with the small
model (``models.small``, else ``models.main``; ``--model`` to choose), writes what the model
proposes under the rules of automatic extraction and moves the session's cursor. ``--dry-run``
prints what would be written and changes nothing. The harness is imported only when the
command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from oharness.cli.context import common_options, emit_json, open_for, warn

if TYPE_CHECKING:
    from oharness.extraction import ExtractionReport
    from oharness.harness.model import ChatModel
    from oharness.memory.workspace import Workspace


def _model(workspace: Workspace, model: str | None) -> ChatModel:
    from oharness.cli.chat_run import provider_environment
    from oharness.harness.providers import configured_models, create_model, parse_model_spec

    if model is not None:
        return create_model(parse_model_spec(model), provider_environment())
    return configured_models(workspace.settings.models, provider_environment()).summariser


def _print_report(report: ExtractionReport, session_id: str, nothing: bool) -> None:
    from oharness.extraction import Announcement

    if nothing:
        click.echo(
            f"nothing to read in session {session_id}: an earlier pass read every message "
            "(--all reads the whole conversation again)"
        )
        return
    if report.dry_run:
        click.echo(f"would write {len(report.saved)} notes (dry run: nothing was changed)")
        for note in report.saved:
            target = f" {note.id}" if note.id else ""
            click.echo(f"\n{note.action}{target} [{note.scope}]: {note.summary}")
            click.echo((note.body or "").rstrip("\n"))
    else:
        written = Announcement.of(report.written)
        click.echo(written.text() if written.count else "saved nothing from this conversation")
    for item in report.dropped:
        click.echo(f"dropped {item.entry}: {item.reason}", err=True)


@click.command("extract")
@common_options
@click.argument("session_id")
@click.option("--dry-run", is_flag=True, help="Show what would be written; change nothing.")
@click.option("--all", "whole", is_flag=True, help="Read the whole conversation again.")
@click.option("--model", default=None, help="openai:NAME or anthropic:NAME (default: small).")
def extract(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    session_id: str,
    dry_run: bool,
    whole: bool,
    model: str | None,
) -> None:
    """Run an extraction pass over a saved chat session."""
    from oharness.cli.extract_run import run_extract

    workspace = open_for(project_path, register=True)
    warn(workspace, as_json)
    report, nothing = run_extract(
        workspace, session_id, dry_run, whole, lambda: _model(workspace, model)
    )
    if as_json:
        data: dict[str, Any] = {"sessionId": session_id, **report.to_dict()}
        emit_json(data)
    else:
        _print_report(report, session_id, nothing)
