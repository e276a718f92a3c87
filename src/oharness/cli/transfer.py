"""``oharness memory import`` and ``oharness memory export``: bringing memories in and out."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

import click

from oharness.cli.context import common_options, emit_json, open_for, warn
from oharness.errors import ValidationError
from oharness.importers.apply import ImportReport, Outcome, import_reading
from oharness.importers.export import FORMATS, ExportFormat, export_notes
from oharness.importers.readers import READERS
from oharness.notes.ids import random_hex
from oharness.tools.workspace import wall_clock_ms
from oharness.types import parse_scope


@click.command("import")
@common_options
@click.argument("source_kind", metavar="claude-code|codex|markdown", type=click.Choice(READERS))
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Show what would be imported; write nothing.")
@click.option(
    "--scope",
    type=click.Choice(["project", "user"]),
    default=None,
    help="Put every note in this scope (default: user for type user, else project; "
    "Codex memories: user).",
)
def import_memories(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    source_kind: str,
    path: Path,
    dry_run: bool,
    scope: str | None,
) -> None:
    """Bring in memories from Claude Code, Codex or a folder of Markdown files."""
    workspace = open_for(project_path, register=not dry_run)
    warn(workspace, as_json)
    reading = READERS[source_kind](path)
    total = len(reading.drafts)
    target = parse_scope(scope) if scope else None
    max_bytes = workspace.settings.memory.max_note_bytes

    def run(progress: Callable[[int], None] | None) -> ImportReport:
        return import_reading(
            workspace.service,
            reading,
            clock=wall_clock_ms,
            hex_source=random_hex,
            max_note_bytes=max_bytes,
            scope=target,
            dry_run=dry_run,
            progress=progress,
        )

    if sys.stderr.isatty() and not as_json and total:
        with click.progressbar(length=total, label="importing", file=sys.stderr) as bar:
            report = run(bar.update)
    else:
        report = run(None)
    if as_json:
        emit_json(report.to_dict())
        return
    _print_report(report)


def _print_report(report: ImportReport) -> None:
    rows = [(item.outcome, item.source, item.id or "", item.reason) for item in report.items]
    if rows:
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        widths = [
            max(width, len(title))
            for width, title in zip(widths, ("outcome", "source", "id"), strict=True)
        ]
        click.echo(
            f"{'outcome':<{widths[0]}}  {'source':<{widths[1]}}  {'id':<{widths[2]}}  reason"
        )
        for outcome, source, note_id, reason in rows:
            click.echo(
                f"{outcome:<{widths[0]}}  {source:<{widths[1]}}  {note_id:<{widths[2]}}  {reason}"
            )
    done: Outcome = "would import" if report.dry_run else "imported"
    click.echo(
        f"{report.count(done)} {done}, {report.count('skipped')} skipped, "
        f"{report.count('refused')} refused"
        + (" (dry run: nothing written)" if report.dry_run else "")
    )


@click.command("export")
@common_options
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--format",
    "export_format",
    type=click.Choice(FORMATS),
    default="folder",
    help="folder: the note files as they are; claude-code: Claude Code's memory layout.",
)
def export_memories(
    project_path: Path | None, as_json: bool, debug: bool, path: Path, export_format: str
) -> None:
    """Write every note to PATH/<scope>/ (never overwriting a file there)."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    if path.exists() and not path.is_dir():
        raise ValidationError(f"{path} is a file; name a folder to export into")
    report = export_notes(workspace.service, path, cast(ExportFormat, export_format))
    if as_json:
        emit_json(report.to_dict())
        return
    for name in report.existing:
        click.echo(f"left alone (exists): {name}")
    click.echo(f"{len(report.written)} files written to {path}, {len(report.existing)} left alone")
