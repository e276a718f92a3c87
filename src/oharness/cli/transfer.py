"""``oharness memory import`` and ``oharness memory export``: bringing memories in and out."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import click

from oharness.cli.context import common_options, emit_json, open_for, plural, say, warn
from oharness.errors import OHarnessError, ValidationError
from oharness.importers.claude_import import (
    left_out_skips,
    plan_claude_import,
    planned_sources,
    read_planned,
)
from oharness.importers.claude_routing import current_facts
from oharness.importers.draft_writer import (
    ImportReport,
    ItemReport,
    Outcome,
    SeenNotes,
    import_reading,
)
from oharness.importers.export import FORMATS, ExportFormat, export_notes
from oharness.importers.readers import READERS
from oharness.importers.source import Reading
from oharness.memory.workspace import Workspace, wall_clock_ms
from oharness.notes.text import terminal_safe
from oharness.types import Scope, parse_scope


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
@click.option(
    "--all",
    "all_projects",
    is_flag=True,
    help="claude-code: bring each Claude Code project into its own registered project "
    "(default: only the current project's).",
)
@click.option(
    "--include-claude-md",
    is_flag=True,
    help="claude-code: import CLAUDE.md files as notes too (default: skipped, with the reason).",
)
def import_memories(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    source_kind: str,
    path: Path,
    dry_run: bool,
    scope: str | None,
    all_projects: bool,
    include_claude_md: bool,
) -> None:
    """Bring in memories from Claude Code, Codex or a folder of Markdown files.

    claude-code: from a PATH holding several projects (~/.claude, ~/.claude/projects) only
    the current project's memory comes in, and the others are listed; --all brings each
    into its own registered project. A PATH naming one project folder or one memory folder
    goes into the current project.
    """
    if source_kind != "claude-code" and (all_projects or include_claude_md):
        flag = "--all" if all_projects else "--include-claude-md"
        raise ValidationError(f"{flag} is for claude-code imports only; leave it out")
    workspace = open_for(project_path, register=True, dry_run=dry_run)
    warn(workspace, as_json)
    report = ImportReport(dry_run=dry_run)
    seen: dict[Path, SeenNotes] = {}
    left_out: list[ItemReport] = []
    if source_kind == "claude-code":
        batches = _claude_batches(
            workspace,
            path,
            left_out,
            all_projects=all_projects,
            include=include_claude_md,
            as_json=as_json,
        )
    else:
        batches = [_Batch(workspace, READERS[source_kind](path), None)]
    target = parse_scope(scope) if scope else None
    total = sum(len(batch.reading.drafts) for batch in batches)
    if sys.stderr.isatty() and not as_json and total:
        with click.progressbar(length=total, label="importing", file=sys.stderr) as bar:
            for batch in batches:
                report.items.extend(_run(batch, target, dry_run, bar.update, seen).items)
    else:
        for batch in batches:
            report.items.extend(_run(batch, target, dry_run, None, seen).items)
    report.items.extend(left_out)
    if as_json:
        emit_json(report.to_dict())
    else:
        _print_report(report)
        if left_out:
            hint = "" if all_projects else "; --all brings each into its own project"
            say(f"{plural(len(left_out), 'Claude Code project')} left out (see above){hint}")
    if report.count("refused"):  # a script sees that not everything came in (as sync now)
        raise click.exceptions.Exit(1)


@dataclass(frozen=True)
class _Batch:
    """One reading and the workspace it goes into (``project`` named under ``--all``)."""

    workspace: Workspace
    reading: Reading
    project: Path | None


def _claude_batches(
    workspace: Workspace,
    path: Path,
    left_out: list[ItemReport],
    *,
    all_projects: bool,
    include: bool,
    as_json: bool,
) -> list[_Batch]:
    """One batch per project the Claude Code projects go to; those left out go in ``left_out``."""
    project = workspace.project
    current = None
    if project is not None:
        current = current_facts(project.root, project.identity.id if project.identity else None)
    plan = plan_claude_import(path, current, route_all=all_projects, home=workspace.home.home)
    if not as_json:
        for notice in plan.notices:
            say(f"note: {notice}", err=True)
    named = current.root if all_projects and current is not None else None
    left_out.extend(
        ItemReport(skip.source, "skipped", skip.reason) for skip in left_out_skips(path, plan)
    )
    first = read_planned(path, plan, None, include_instructions=include)
    batches = [_Batch(workspace, first, named)]
    for target in plan.groups:
        if target is None:
            continue
        try:
            other = open_for(target, register=False)
        except OHarnessError as exc:
            left_out.extend(
                ItemReport(name, "skipped", exc.message)
                for name in planned_sources(path, plan, target)
            )
            continue
        warn(other, as_json)
        reading = read_planned(path, plan, target, include_instructions=include)
        batches.append(_Batch(other, reading, target))
    return batches


def _run(
    batch: _Batch,
    scope: Scope | None,
    dry_run: bool,
    progress: Callable[[int], None] | None,
    seen: dict[Path, SeenNotes],
) -> ImportReport:
    report = import_reading(
        batch.workspace.service,
        batch.reading,
        clock=wall_clock_ms,
        max_note_bytes=batch.workspace.settings.memory.max_note_bytes,
        scope=scope,
        dry_run=dry_run,
        progress=progress,
        seen=seen,
    )
    if batch.project is not None:
        report.items = [replace(item, project=str(batch.project)) for item in report.items]
    return report


def _print_report(report: ImportReport) -> None:
    titles = ["outcome", "source", "id"]
    rows = [[item.outcome, item.source, item.id or "", item.reason] for item in report.items]
    if any(item.project for item in report.items):
        titles.append("project")
        for row, item in zip(rows, report.items, strict=True):
            row.insert(3, item.project or "")
    if rows:
        widths = [
            max(len(title), *(len(row[index]) for row in rows))
            for index, title in enumerate(titles)
        ]
        heading = [f"{title:<{width}}" for title, width in zip(titles, widths, strict=True)]
        click.echo("  ".join([*heading, "reason"]))
        for row in rows:
            cells = [f"{cell:<{width}}" for cell, width in zip(row, widths, strict=False)]
            click.echo(terminal_safe("  ".join([*cells, row[-1]]), multiline=False))
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
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
def export_memories(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    path: Path,
    export_format: str,
    dry_run: bool,
) -> None:
    """Write every note to PATH/<scope>/, bringing an earlier export there up to date."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    if path.exists() and not path.is_dir():
        raise ValidationError(f"{path} is a file; name a folder to export into")
    report = export_notes(
        workspace.service,
        path,
        cast(ExportFormat, export_format),
        clock=wall_clock_ms,
        dry_run=dry_run,
        home=workspace.home.home,
    )
    if as_json:
        emit_json(report.to_dict())
        return
    would = "would be " if dry_run else ""
    for name in report.written:
        say(f"{would}written: {name}")
    for name in report.updated:
        say(f"{would}updated: {name}")
    moved = "would be moved" if dry_run else "moved"
    for backup in report.backups:
        say(
            f"{moved} aside first (changed there since the last export): "
            f"{backup['file']} -> {backup['backup']}"
        )
    for name in report.stale:
        say(f"left in place (no longer a note): {name}")
    say(
        f"{plural(len(report.written), 'file')} {would}written, {len(report.updated)} "
        f"{would}updated, {len(report.existing)} up to date in {path}"
        + (" (dry run: nothing written)" if dry_run else "")
    )
