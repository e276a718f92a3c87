"""``oharness memory review`` and ``oharness memory merge`` (spec 05, 12)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from oharness.cli.context import common_options, emit_json, open_for, stdin_is_terminal, warn
from oharness.errors import OHarnessError, UnavailableError, ValidationError
from oharness.memory.memory_service import split_scoped_id
from oharness.memory.workspace import Workspace, wall_clock_ms
from oharness.review.findings import Finding
from oharness.review.merge import MergeDraft, MergePlan, draft_file_text, draft_from_file_text
from oharness.types import Scope, parse_scope

if TYPE_CHECKING:
    from oharness.review.drafting import DraftModel
    from oharness.review.review_service import ReviewService

_SCOPE = click.Choice(["project", "user"])
_LABELS = {
    "same-topic": "Same topic",
    "broken-link": "Broken link",
    "missing-file": "Missing file",
    "unused": "Unused",
    "too-long": "Too long",
}


def _review(workspace: Workspace, *, sync: bool) -> ReviewService:
    """The review of a workspace; with ``sync``, merges of syncing scopes commit first."""
    from oharness.review.review_service import open_review

    committer = None
    if sync and workspace.user_available:
        from oharness.sync.batch import commit_first_for
        from oharness.sync.sync_service import SyncService

        service = SyncService(
            workspace.home,
            backups=workspace.service.backups(),
            clock=wall_clock_ms,
            environ_token=os.environ.get("OHARNESS_TOKEN"),
        )
        committer = commit_first_for(service, workspace)
    return open_review(workspace, clock=wall_clock_ms, committer=committer)


def _show_finding(finding: Finding) -> None:
    click.echo(f"{finding.id}  [{finding.scope}] {_LABELS[finding.kind]}: {finding.message}")
    click.echo(f"    actions: {', '.join(finding.actions)}")


@click.group(invoke_without_command=True)
@common_options
@click.option("--scope", type=_SCOPE, default=None, help="Only this scope (default: both).")
@click.option("--all", "show_all", is_flag=True, help="Include dismissed findings.")
@click.pass_context
def review(
    context: click.Context,
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    scope: str | None,
    show_all: bool,
) -> None:
    """List what needs tidying (待整理): duplicates, broken links, missing files, unused, long."""
    if context.invoked_subcommand is not None:
        return
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    chosen: Scope | None = parse_scope(scope) if scope else None
    findings = _review(workspace, sync=False).review(chosen, dismissed=show_all)
    if as_json:
        emit_json({"findings": [finding.to_dict() for finding in findings]})
        return
    if not findings:
        click.echo("Nothing to tidy up.")
        return
    for finding in findings:
        _show_finding(finding)
    click.echo(
        "Merge a group with 'oharness memory merge ID ID…'; hide a finding with "
        "'oharness memory review dismiss FINDING_ID'."
    )


@review.command("dismiss")
@common_options
@click.argument("finding_id")
def dismiss(project_path: Path | None, as_json: bool, debug: bool, finding_id: str) -> None:
    """Hide a finding on this machine until one of its notes changes."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    finding = _review(workspace, sync=False).dismiss(finding_id)
    if as_json:
        emit_json({"dismissed": finding.to_dict()})
    else:
        click.echo(f"Dismissed {finding.id}; it comes back if one of its notes changes")


def _model(workspace: Workspace) -> DraftModel:
    from oharness.cli.chat_run import provider_environment
    from oharness.harness.consolidation import chat_model_drafter
    from oharness.harness.providers import configured_models

    settings = workspace.settings.models
    if not (settings.small or settings.main):
        raise UnavailableError(
            "no model is configured for merge suggestions: set models.small (or models.main) in "
            "config.json, or use the concatenated draft (--draft concat)"
        )
    models = configured_models(settings, provider_environment())
    return chat_model_drafter(models.summariser)


def _edit(plan: MergePlan, draft: MergeDraft, review: ReviewService) -> MergeDraft:
    from oharness.cli.memory import _run_editor

    notes = {stored.id: stored.note for stored in review.memory.store(plan.scope).notes()}
    handle, name = tempfile.mkstemp(prefix=f"merge-{plan.keep}-", suffix=".md")
    path = Path(name)
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(draft_file_text(plan, draft, notes))
    _run_editor(path)
    try:
        edited = draft_from_file_text(plan, path.read_text(encoding="utf-8"))
    except OHarnessError as exc:
        raise type(exc)(f"{exc.message} (your edited text is kept in {path})") from exc
    path.unlink()
    return edited


def _show_plan(plan: MergePlan, draft: MergeDraft) -> None:
    click.echo(f"Merge plan ({plan.scope}): keep {plan.keep} (the oldest)")
    click.echo(f"  delete: {', '.join(plan.delete)}")
    if plan.relink:
        click.echo(f"  links pointed at {plan.keep} in: {', '.join(plan.relink)}")
    click.echo(f"Draft ({draft.source}):")
    click.echo(f"  summary: {draft.summary}")
    click.echo(f"  tags: {', '.join(draft.tags) or '(none)'}")
    for line in draft.body.splitlines():
        click.echo(f"  | {line}")
    for warning in draft.warnings:
        click.echo(f"  note: {warning}")


@click.command()
@common_options
@click.argument("note_ids", nargs=-1, required=True)
@click.option("--scope", type=_SCOPE, default=None, help="When the ids exist in both scopes.")
@click.option(
    "--draft",
    "draft_kind",
    type=click.Choice(["concat", "model"]),
    default="concat",
    help="concat: every original, oldest first (default); model: the small model's suggestion.",
)
@click.option("--edit", "edit_draft", is_flag=True, help="Edit the draft in $EDITOR first.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking.")
def merge(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    note_ids: tuple[str, ...],
    scope: str | None,
    draft_kind: str,
    edit_draft: bool,
    yes: bool,
) -> None:
    """Merge notes of one scope into the oldest one (backups first; links follow)."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    review_service = _review(workspace, sync=True)
    named: Scope | None = parse_scope(scope) if scope else None
    ids = []
    for value in note_ids:  # "user:ID" as listings print it; one scope for them all
        note_id, named = split_scoped_id(value, named)
        ids.append(note_id)
    plan = review_service.plan(tuple(ids), named)
    model = _model(workspace) if draft_kind == "model" else None
    draft = review_service.draft(plan, draft_kind, model)
    if edit_draft:
        draft = _edit(plan, draft, review_service)
    try:  # refused before a draft that cannot be saved is shown
        review_service.checked(draft)
    except OHarnessError as exc:
        raise type(exc)(
            f"the merged note would be refused: {exc.message}; merge fewer notes, or shorten "
            "the draft with --edit"
        ) from exc
    if not as_json:
        _show_plan(plan, draft)
    if not yes:
        if not stdin_is_terminal():
            raise ValidationError("not merging without confirmation: pass --yes to apply")
        click.confirm("Apply this merge?", abort=True)
    result = review_service.apply(plan, draft)
    if as_json:
        emit_json({"plan": plan.to_dict(), "draft": draft.to_dict(), **result.to_dict()})
        return
    where = " (committed to the cloud first)" if result.committed_version is not None else ""
    click.echo(
        f"Merged into {result.kept}{where}; deleted {', '.join(result.deleted)}; "
        f"{len(result.backups)} backups written"
    )
