"""The page's To tidy up (待整理; spec 11, section 4; 05): the review list and its actions.

- The list is :meth:`ReviewService.review` (what ``oharness memory review`` prints): dismissed
  findings stay hidden until one of their notes changes — the review's own rule.
- Merge opens an editor with a draft from :meth:`ReviewService.draft`: the small model's
  (生成合并建议, offered only when the daemon has one) or the originals concatenated (手动合并).
  The editor carries the plan (the notes' hashes); saving is :meth:`ReviewService.apply`, so a
  note changed since is refused with an explanation and nothing changes, the draft is checked
  like any note, every note changed or deleted is backed up, links follow the kept note, and a
  scope that syncs commits to the cloud first.
- Open goes to the note in the Notes section; dismiss is :meth:`ReviewService.dismiss`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

from fastapi import APIRouter
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from oharness.daemon.page.cloud import cloud_of
from oharness.daemon.page.messages import error_text, finding_text
from oharness.daemon.page.render import marked
from oharness.daemon.page.threaded import fragment
from oharness.daemon.page.view import PageView, Section, page_view, read_form
from oharness.errors import OHarnessError
from oharness.review.findings import Finding
from oharness.review.merge import MergeDraft, MergePlan, plan_from_dict
from oharness.review.review_service import ReviewService, open_review
from oharness.types import NOTE_TYPES

LIST_TEMPLATE: Final = "tidy/list.html"
#: The most findings drawn (same-topic groups first); the rest are counted.
SHOWN: Final = 200
DRAFT_FIELDS: Final = ("summary", "type", "tags", "body")


def _review(view: PageView, *, commit_first: bool = False) -> ReviewService:
    committer = None
    if commit_first and view.hosted.workspace.user_available:
        from oharness.sync.batch import commit_first_for

        committer = commit_first_for(cloud_of(view).service, view.hosted.workspace)
    return open_review(view.hosted.workspace, clock=view.state.options.clock, committer=committer)


def _summaries(view: PageView, findings: list[Finding]) -> dict[str, str]:
    service = view.hosted.workspace.service
    found: dict[str, str] = {}
    for finding in findings:
        store = service.store(finding.scope)
        for note_id in finding.notes:
            stored = store.get(note_id)
            if stored is not None:
                found[f"{finding.scope}:{note_id}"] = stored.note.summary
    return found


def _context(
    view: PageView,
    *,
    outcome: dict[str, Any] | None = None,
    editor: dict[str, Any] | None = None,
) -> dict[str, Any]:
    found = _review(view).review()
    found.sort(key=lambda finding: finding.kind != "same-topic")  # stable: merges first
    findings = found[:SHOWN]
    return {
        "findings": findings,
        "hidden": len(found) - len(findings),
        "summaries": _summaries(view, findings),
        "said": {
            finding.id: finding_text(view.t, finding.to_dict(), view.state.options.clock())
            for finding in findings
        },
        "has_model": view.state.options.small_model is not None,
        "note_types": NOTE_TYPES,
        "outcome": outcome,
        "editor": editor,
    }


def _section_context(view: PageView) -> dict[str, Any]:
    return _context(view)


async def _list(view: PageView, status: int = 200, **context: Any) -> Response:
    return await fragment(view, LIST_TEMPLATE, lambda: _context(view, **context), status=status)


async def _error(view: PageView, text: str | Markup, status: int = 422, **context: Any) -> Response:
    return await _list(view, status, outcome={"kind": "error", "text": text}, **context)


def _draft(view: PageView, review: ReviewService, plan: MergePlan, kind: str) -> MergeDraft:
    model = view.state.options.small_model
    if kind == "model" and model is not None:
        from oharness.harness.consolidation import chat_model_drafter

        return review.draft(plan, "model", chat_model_drafter(model))
    return review.draft(plan, "concat")


def _editor(
    plan: MergePlan, values: dict[str, str], *, warnings: tuple[str, ...] = (), source: str = ""
) -> dict[str, Any]:
    return {
        "plan": plan,
        "plan_json": json.dumps(plan.to_dict(), ensure_ascii=False),
        "values": values,
        "errors": {},
        "warnings": warnings,
        "source": source,
        "stale": False,
    }


async def _open_merge(request: Request) -> Response:
    view = page_view(request)
    form = await read_form(request)
    kind = "model" if form.get("draft") == "model" else "concat"
    review = _review(view)
    try:
        finding = review.finding(form.get("finding", ""))
        plan = review.plan(finding.notes, finding.scope)
        draft = await asyncio.to_thread(_draft, view, review, plan, kind)
    except OHarnessError as exc:
        return await _error(view, error_text(view.t, exc))
    values = {
        "summary": draft.summary,
        "type": draft.type or "",
        "tags": ", ".join(draft.tags),
        "body": draft.body,
    }
    editor = _editor(plan, values, warnings=draft.warnings, source=draft.source)
    editor["finding"] = finding.id
    return await _list(view, editor=editor)


def _edited_draft(values: dict[str, str]) -> MergeDraft:
    from oharness.notes.ids import clean_tags

    return MergeDraft(
        values["summary"],
        values["body"],
        clean_tags(values["tags"]),
        values["type"] or None,
        "edited",
    )


async def _apply(request: Request) -> Response:
    view = page_view(request)
    form = await read_form(request)
    values = {name: form.get(name, "") for name in DRAFT_FIELDS}
    try:
        plan = plan_from_dict(json.loads(form.get("plan", "")))
    except (OHarnessError, ValueError):
        return await _error(view, view.t("tidy.bad_plan"))
    editor = _editor(plan, values)
    editor["finding"] = form.get("finding", "")
    review = _review(view, commit_first=True)
    try:
        draft = _edited_draft(values)
        result = await asyncio.to_thread(review.apply, plan, draft)
    except OHarnessError as exc:
        field = exc.details.get("field")
        if field in values:
            editor["errors"] = {field: error_text(view.t, exc)}
            return await _list(view, 422, editor=editor)
        editor["stale"] = exc.details.get("reason") == "stale_plan"
        return await _error(view, error_text(view.t, exc), editor=editor)
    view.changed(plan.scope)
    parts = [marked(view.t, "tidy.merged", kept=result.kept, deleted=", ".join(result.deleted))]
    if result.relinked:
        parts.append(marked(view.t, "tidy.merged_relinked", relinked=", ".join(result.relinked)))
    else:
        parts.append(marked(view.t, "tidy.merged_no_links"))
    parts.append(marked(view.t, "tidy.merged_backups", backups=len(result.backups)))
    if result.committed_version is not None:
        parts.append(marked(view.t, "tidy.committed"))
    text = Markup(" ").join(parts)
    return await _list(view, outcome={"kind": "done", "text": text})


async def _dismiss(request: Request) -> Response:
    view = page_view(request)
    form = await read_form(request)
    try:
        finding = await asyncio.to_thread(_review(view).dismiss, form.get("finding", ""))
    except OHarnessError as exc:
        return await _error(view, error_text(view.t, exc))
    text = view.t("tidy.dismissed", kind=view.t(f"tidy.kind.{finding.kind}"))
    return await _list(view, outcome={"kind": "done", "text": text})


def _routes(router: APIRouter) -> None:
    @router.get("/tidy/list")
    async def listing(request: Request) -> Response:
        return await _list(page_view(request))

    router.add_api_route("/tidy/merge", _open_merge, methods=["POST"], name="page-tidy-merge")
    router.add_api_route("/tidy/apply", _apply, methods=["POST"], name="page-tidy-apply")
    router.add_api_route("/tidy/dismiss", _dismiss, methods=["POST"], name="page-tidy-dismiss")


SECTION = Section("tidy", _section_context, _routes)
