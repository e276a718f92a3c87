"""``oharness memory …``: the memory tools from the shell."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click

from oharness.cli.context import (
    EXIT_PROBLEMS,
    common_options,
    emit_json,
    format_time,
    one_shot,
    open_for,
    plural,
    say,
    stdin_is_terminal,
    warn,
)
from oharness.cli.lazy import LazyGroup
from oharness.errors import OHarnessError, UnavailableError, ValidationError
from oharness.fsio import atomic_write
from oharness.memory.doctor import diagnose, loose_files
from oharness.memory.fields import check_new_note
from oharness.memory.memory_service import UNSET, Unset, note_file_text
from oharness.memory.note_filter import UNTYPED, NoteFilter
from oharness.memory.workspace import Workspace
from oharness.notes.store import StoredNote
from oharness.notes.text import terminal_safe
from oharness.types import NOTE_TYPES, Scope, default_scope_for, parse_scope

_SCOPE = click.Choice(["project", "user"])


def _scope(value: str | None) -> Scope | None:
    return parse_scope(value) if value is not None else None


@click.group(
    cls=LazyGroup,
    lazy={
        "review": "oharness.cli.review:review",
        "merge": "oharness.cli.review:merge",
        "extract": "oharness.cli.extract:extract",
        "import": "oharness.cli.transfer:import_memories",
        "export": "oharness.cli.transfer:export_memories",
    },
)
def memory() -> None:
    """Remember, read and forget notes in the project and user scopes."""


@memory.command()
@common_options
@click.option(
    "--summary", "-s", default=None, help="One line, at most 200 characters (kept with --id)."
)
@click.option(
    "--body",
    "-b",
    default=None,
    help="The note's Markdown body (default: stdin; with --id, kept when stdin is a terminal "
    "or empty).",
)
@click.option("--type", "note_type", type=click.Choice(list(NOTE_TYPES)), default=None)
@click.option("--no-type", is_flag=True, help="Remove the type (when updating with --id).")
@click.option("--tags", "-t", default=None, help="Comma or space separated; '' clears them.")
@click.option("--scope", type=_SCOPE, default=None, help="Default: user for type user.")
@click.option("--id", "note_id", default=None, help="Update this note instead of creating one.")
@one_shot()
def remember(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    summary: str | None,
    body: str | None,
    note_type: str | None,
    no_type: bool,
    tags: str | None,
    scope: str | None,
    note_id: str | None,
) -> None:
    """Create a note, or update one with --id (fields left out are kept)."""
    if note_type is not None and no_type:
        raise click.UsageError("--type and --no-type exclude each other")
    if summary is None and note_id is None:
        raise click.UsageError("Missing option '--summary' / '-s'.")
    if body is None and not (note_id is not None and stdin_is_terminal()):
        if stdin_is_terminal():
            say("Type the body, then Ctrl-D on a new line:", err=True)
        body = sys.stdin.read()
        if note_id is not None and not body.strip():
            body = None  # nothing piped: the body is kept
    # Only a new project note needs the project registered; user notes and updates never do.
    target_scope = _scope(scope) or default_scope_for(note_type)
    register = note_id is None and target_scope == "project"
    if register:  # a note refused registers no project: checked first
        assert summary is not None and body is not None
        check_new_note(summary, body, type=note_type or UNSET, tags=UNSET if tags is None else tags)
    workspace = open_for(project_path, register=register)
    warn(workspace, as_json)
    type_arg: str | Unset | None = UNSET
    if note_type is not None:
        type_arg = note_type
    elif no_type:
        type_arg = None
    result = workspace.service.remember(
        summary,
        body,
        type=type_arg,
        tags=UNSET if tags is None else tags,
        scope=_scope(scope),
        id=note_id,
    )
    if as_json:
        emit_json(result.to_dict())
        return
    if result.created:
        say(f"Saved {result.id} ({result.scope}): {result.path}")
    elif result.changed:
        say(f"Updated {result.id} ({result.scope}): {result.path}")
    elif note_id is None:
        say(f"Already saved with the same content as {result.id} ({result.scope}); nothing written")
    else:
        say(f"No change to {result.id} ({result.scope})")
    for target in result.dangling_links:
        say(f"note: [[{target}]] does not exist yet (kept as a dangling link)")
    if result.likely_duplicate:
        twin = result.likely_duplicate
        say(
            f"note: looks like a duplicate of {twin['id']} ({twin['scope']}): {twin['summary']}; "
            "consider merging them"
        )
    if result.related:
        say("related: " + ", ".join(f"{hit['id']}" for hit in result.related))


def _filter_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--scope``, ``--type`` and ``--tag``: which notes a listing or a search keeps."""
    command = click.option("--tag", default=None, help="Only notes with this tag.")(command)
    command = click.option(
        "--type",
        "note_type",
        type=click.Choice([*NOTE_TYPES, UNTYPED]),
        default=None,
        help=f"Only notes of this type ({UNTYPED}: without a type).",
    )(command)
    return click.option("--scope", type=_SCOPE, default=None, help="Only this scope.")(command)


@memory.command()
@common_options
@click.argument("query")
@click.option("--limit", type=click.IntRange(min=1, max=200), default=10)
@_filter_options
def search(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    query: str,
    limit: int,
    scope: str | None,
    note_type: str | None,
    tag: str | None,
) -> None:
    """Find notes in both scopes matching QUERY, best first (no threshold)."""
    workspace = open_for(project_path, register=False, first_use=True)
    warn(workspace, as_json)
    hits = workspace.service.search(query, limit, NoteFilter.of(scope, note_type, tag))
    if as_json:
        emit_json({"query": query, "results": [hit.to_dict() for hit in hits]})
        return
    if not hits:
        say("No matching notes.")
    for hit in hits:
        marker = "user:" if hit.scope == "user" else ""
        say(f"{hit.score:6.2f}  {hit.summary} ({marker}{hit.id})")
        if hit.snippet:
            say(f"        {hit.snippet}")


@memory.command("index")
@common_options
def show_index(project_path: Path | None, as_json: bool, debug: bool) -> None:
    """Print the Memory section of the system prompt, as a model would see it."""
    workspace = open_for(project_path, register=False, first_use=True)
    warn(workspace, as_json)
    text = workspace.memory_index()
    if as_json:
        emit_json({"section": text})
    else:
        say(text)


@memory.command("recall")
@common_options
@click.argument("message")
@click.option(
    "--exclude", multiple=True, help="A note id already attached in the conversation (repeat)."
)
def recall_message(
    project_path: Path | None, as_json: bool, debug: bool, message: str, exclude: tuple[str, ...]
) -> None:
    """Print exactly what would be attached to MESSAGE (usually nothing)."""
    workspace = open_for(project_path, register=False, first_use=True)
    warn(workspace, as_json)
    outcome = workspace.service.recall_preview(message, exclude)
    if as_json:
        emit_json(outcome.to_dict())
    elif outcome.block:
        say(outcome.block)
    else:
        say("(nothing would be attached)")


@memory.command("show")
@common_options
@click.argument("note_id")
@click.option("--scope", type=_SCOPE, default=None)
def show_note(
    project_path: Path | None, as_json: bool, debug: bool, note_id: str, scope: str | None
) -> None:
    """Show one note with its links."""
    workspace = open_for(project_path, register=False, first_use=True)
    warn(workspace, as_json)
    view = workspace.service.read(note_id, _scope(scope))
    if as_json:
        emit_json(view.to_dict())
        return
    click.echo(click.style(terminal_safe(view.summary), bold=True))
    say(f"id: {view.id}  scope: {view.scope}  type: {view.type or '-'}")
    say(f"tags: {', '.join(view.tags) or '-'}")
    say(f"created {format_time(view.created_at)}, updated {format_time(view.updated_at)}")
    say(f"file: {view.path}")
    say("")
    say(view.body.rstrip("\n"))
    if view.links:
        say("\nlinks:")
        for link in view.links:
            shown = f"{link.summary} ({link.scope})" if link.scope else "missing"
            say(f"  -> [[{link.id}]] {shown}")
    if view.incoming:
        say("\nlinked from:")
        for link in view.incoming:
            say(f"  <- [[{link.id}]] {link.summary} ({link.scope})")


@memory.command("list")
@common_options
@click.option("--offset", type=click.IntRange(min=0), default=0)
@click.option("--limit", type=click.IntRange(min=1), default=50)
@_filter_options
def list_notes(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    offset: int,
    limit: int,
    scope: str | None,
    note_type: str | None,
    tag: str | None,
) -> None:
    """List notes of both scopes, most recently updated first, then the Markdown files of
    the notes folders that are not notes (yet), with the reason and the fix."""
    workspace = open_for(project_path, register=False, first_use=True)
    warn(workspace, as_json)
    filters = NoteFilter.of(scope, note_type, tag)
    listing = workspace.service.listing(offset, limit, filters)
    loose = [] if filters.narrows else loose_files(workspace.service)
    if as_json:
        emit_json({**listing.to_dict(), "notNotes": [found.to_json() for found in loose]})
        return
    if listing.total == 0 and filters.narrows:
        say("No notes match these filters.")
        return
    if listing.total == 0 and not loose:
        say("No notes yet. Save one with: oharness memory remember --summary ... --body ...")
        return
    for item in listing.items:
        say(item.line())
    if listing.next_offset is not None:
        rest = listing.total - listing.next_offset
        say(f"... {rest} more: --offset {listing.next_offset}")
    if loose:
        say(f"\n{plural(len(loose), 'file')} in the notes folders not loaded as notes:")
        for found in loose:
            say(f"  {found.scope}: {found.relative}: {found.message}")


@memory.command()
@common_options
@click.argument("note_id")
@click.option("--scope", type=_SCOPE, default=None)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def forget(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    note_id: str,
    scope: str | None,
    yes: bool,
) -> None:
    """Delete a note (a backup is written first; 'restore' brings it back)."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    stored = workspace.service.find(note_id, _scope(scope))
    if not yes:
        if not stdin_is_terminal():
            raise ValidationError(
                f"not forgetting {note_id} without confirmation: pass --yes to confirm"
            )
        click.confirm(f"Forget {stored.id} ({stored.scope}): {stored.note.summary}?", abort=True)
    result = workspace.service.forget(stored.id, stored.scope)
    if as_json:
        emit_json(result.to_dict())
    else:
        say(f"Forgot {result.id} ({result.scope}); backup {result.backup_id}")


def _run_editor(path: Path) -> None:
    """Run $VISUAL or $EDITOR on ``path``; ValidationError, naming the fix, when it cannot run,
    fails, or leaves no file behind."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        command = shlex.split(editor)
    except ValueError as exc:
        raise ValidationError(
            f"cannot read the editor command {editor!r} ({exc}); set $EDITOR to a command as a "
            f"shell would split it (your text is kept in {path})"
        ) from exc
    try:
        completed = subprocess.run([*command, str(path)], check=False)
    except OSError as exc:
        raise ValidationError(
            f"cannot start the editor {editor!r} ({exc.strerror or exc}); set $EDITOR "
            f"(your text is kept in {path})"
        ) from exc
    if completed.returncode != 0:
        raise ValidationError(
            f"the editor exited with status {completed.returncode}; nothing was changed "
            f"(your text is kept in {path}; 'edit' again continues from it)"
        )
    if not path.is_file():
        raise ValidationError(
            f"the editor removed the text it was editing ({path}); nothing was changed"
        )


def _edit_file(workspace: Workspace, stored: StoredNote) -> Path:
    """Where the text being edited lives: inside OHARNESS_HOME, readable by the owner only."""
    if not workspace.user_available:
        raise UnavailableError(
            f"edit keeps your text in OHARNESS_HOME while you edit, and {workspace.home.home} "
            "cannot be used; set OHARNESS_HOME to a folder you can write"
        )
    directory = workspace.home.home / "edits"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory / f"{stored.scope}-{stored.id}.md"


def _write_private(path: Path, text: str) -> None:
    # Atomic, so a crash never leaves a torn copy that a later edit would continue from.
    atomic_write(path, text.encode("utf-8"), mode=0o600)


@memory.command()
@common_options
@click.argument("note_id")
@click.option("--scope", type=_SCOPE, default=None)
def edit(
    project_path: Path | None, as_json: bool, debug: bool, note_id: str, scope: str | None
) -> None:
    """Open a note in $EDITOR; the result is checked like 'remember' before it is saved.

    While you edit, and after a refused edit, the text is kept in OHARNESS_HOME/edits/ (mode
    0600); editing the same note again continues from it. It is removed once the edit is
    saved or leaves the note unchanged.
    """
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    stored = workspace.service.find(note_id, _scope(scope))
    original = note_file_text(stored)
    path = _edit_file(workspace, stored)
    if path.is_file():
        say(f"continuing your unsaved edit kept in {path}", err=True)
    else:
        _write_private(path, original)
    _run_editor(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"the edited text is not valid UTF-8 (byte {exc.start}); nothing was changed "
            f"(your text is kept in {path}; 'edit' again continues from it)"
        ) from exc
    if text == original:
        path.unlink()
        say(f"No change to {stored.id}")
        return
    try:
        result = workspace.service.apply_edit(stored.id, stored.scope, text)
    except OHarnessError as exc:
        raise type(exc)(
            f"{exc.message} (your edited text is kept in {path}; 'edit' again continues from it)"
        ) from exc
    path.unlink()
    if as_json:
        emit_json(result.to_dict())
    else:
        say(f"{'Updated' if result.changed else 'No change to'} {result.id}")


@memory.command()
@common_options
def doctor(project_path: Path | None, as_json: bool, debug: bool) -> None:
    """Report files that were skipped and why (nothing is changed)."""
    workspace = open_for(project_path, register=False)
    report = diagnose(workspace.service, workspace.warnings)
    if as_json:
        emit_json(report.to_dict())
        if not report.healthy:
            click.get_current_context().exit(EXIT_PROBLEMS)
        return
    for message in report.warnings:
        say(f"warning: {message}")
    for scope, info in report.scopes.items():
        if info.get("available") is False:
            say(f"{scope}: not available")
        else:
            say(
                f"{scope}: {plural(info['notes'], 'note')} in {info['directory']}"
                f" ({info['skipped']} skipped, {info['unloaded']} not loaded)"
            )
    for finding in report.findings:
        label = "problem" if finding.is_problem else "info"
        say(f"{label}: {finding.scope}: {finding.path}: {finding.message}")
    say("healthy" if report.healthy else "problems found (files left untouched)")
    if not report.healthy:
        click.get_current_context().exit(EXIT_PROBLEMS)


@memory.command()
@common_options
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--scope", type=_SCOPE, default=None, help="Which notes folder FILE is in.")
def adopt(
    project_path: Path | None, as_json: bool, debug: bool, file: Path, scope: str | None
) -> None:
    """Make FILE, a Markdown file in a notes folder that is not a note yet, a note.

    A file without frontmatter (or with another program's) gets frontmatter, its summary from
    the first heading or line; the original is backed up first. A note renamed or moved into
    a subfolder by hand is put back under its own name. 'oharness memory list' names them.
    """
    from oharness.importers.adopt import adopt_file, locate

    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    where, relative = locate(workspace, file, _scope(scope))
    result = adopt_file(workspace, where, relative)
    if as_json:
        emit_json(result.to_dict())
        return
    if result.backup_id is None:
        say(f"Put {relative} back as {result.id} ({result.scope}): {result.path}")
    else:
        say(f"Adopted {relative} as {result.id} ({result.scope}): {result.path}")
        say(f"the original is kept as backup {result.backup_id}")


@memory.command()
@common_options
@click.option("--limit", type=click.IntRange(min=1), default=50)
def backups(project_path: Path | None, as_json: bool, debug: bool, limit: int) -> None:
    """List the most recent backups, with when and why."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    records = workspace.service.recent_backups(limit)
    if as_json:
        emit_json({"backups": [record.to_dict() for record in records]})
        return
    if not records:
        say("No backups yet.")
        return
    id_width = max(len("BACKUP"), *(len(record.backup_id) for record in records))
    reason_width = max(len("REASON"), *(len(record.reason) for record in records))
    say(f"{'BACKUP':<{id_width}}  {'WHEN':<16}  {'REASON':<{reason_width}}  NOTE")
    for record in records:
        say(
            f"{record.backup_id:<{id_width}}  {format_time(record.created_at):<16}  "
            f"{record.reason:<{reason_width}}  {record.note_id or '?'}"
        )


@memory.command()
@common_options
@click.argument("backup_id")
@click.option("--scope", type=_SCOPE, default=None, help="Only for backups with no origin.")
def restore(
    project_path: Path | None, as_json: bool, debug: bool, backup_id: str, scope: str | None
) -> None:
    """Put a backup back where it came from (a different current version is backed up)."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    result = workspace.service.restore(backup_id, _scope(scope))
    if as_json:
        emit_json(result.to_dict())
        return
    if not result.changed:
        say(f"{result.id} already has this content; nothing changed")
        return
    say(f"Restored {result.id} ({result.scope}): {result.path}")
    if result.replaced_backup_id:
        say(f"the version it replaced is kept as backup {result.replaced_backup_id}")
