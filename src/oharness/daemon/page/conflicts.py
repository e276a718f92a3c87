"""The page's Conflicts (spec 11, section 3; 07.3): each open conflict side by side, and the
four resolutions.

The list is :func:`oharness.sync.actions.conflict_records` (what ``GET /sync/conflicts`` and
``oharness sync conflicts`` read) shaped by :func:`oharness.sync.conflict_view.conflict_view`;
a resolution is :func:`oharness.sync.actions.resolve_conflict`, the call behind ``POST
/sync/conflicts/{id}/resolve`` — so the page, the REST API and the CLI share one policy. "Merge
by hand" saves the person's fields as a note checked like ``remember`` (the refusal shown next
to its field, the text kept). The list refreshes on ``conflicts`` and ``sync_status`` events,
except while a hand merge is open (its text is never replaced under the person).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from oharness.daemon.page.cloud import Cloud, cloud_of
from oharness.daemon.page.messages import error_text
from oharness.daemon.page.render import marked
from oharness.daemon.page.threaded import fragment
from oharness.daemon.page.view import PageView, Section, page_view, read_form
from oharness.errors import OHarnessError
from oharness.sync.actions import conflict_records, conflict_target, resolve_conflict
from oharness.sync.conflict_view import ConflictView, conflict_view, hand_merged_text
from oharness.sync.resolve import Resolution
from oharness.types import NOTE_TYPES

LIST_TEMPLATE: Final = "conflicts/list.html"
KNOWN_REASONS: Final = frozenset(
    {
        "merge-conflict",
        "new-on-both-sides",
        "base-copy-missing",
        "changed-here-expired-there",
    }
)
KEEPS: Final = ("local", "cloud", "both")


def conflict_views(cloud: Cloud) -> list[ConflictView]:
    """Every open conflict of the page's workspace, project first."""
    return [
        conflict_view(record, target.scope, target.store)
        for target, record in conflict_records(cloud.service, cloud.targets)
    ]


def _context(
    view: PageView,
    *,
    outcome: dict[str, str] | None = None,
    editing: dict[str, Any] | None = None,
) -> dict[str, Any]:
    cloud = cloud_of(view)
    return {
        "conflicts": conflict_views(cloud),
        "known_reasons": KNOWN_REASONS,
        "note_types": NOTE_TYPES,
        "outcome": outcome,
        "editing": editing,
    }


def _section_context(view: PageView) -> dict[str, Any]:
    return _context(view)


def _resolved(view: PageView, resolution: Resolution) -> dict[str, str]:
    keep = "local" if resolution.keep == "both" and not resolution.new_id else resolution.keep
    key = f"conflicts.resolved.{keep}"  # keep both with nothing live in the cloud kept this one
    text = marked(view.t, key, id=resolution.id, new_id=resolution.new_id or "")
    return {"kind": "done", "text": text}


async def _apply(
    view: PageView, scope: str, note_id: str, *, keep: str | None, text: str | None
) -> Resolution:
    cloud = cloud_of(view)
    target = conflict_target(cloud.service, list(cloud.targets), note_id, scope)
    resolution = await asyncio.to_thread(
        resolve_conflict,
        cloud.service,
        target,
        view.hosted.workspace.service.backups(),
        note_id,
        keep=keep,  # type: ignore[arg-type]
        text=text,
        clock=view.state.options.clock,
        max_note_bytes=view.hosted.workspace.settings.memory.max_note_bytes,
    )
    view.changed(target.scope)
    return resolution


async def _refused(view: PageView, error: OHarnessError, **extra: Any) -> Response:
    outcome = {"kind": "error", "text": error_text(view.t, error)}
    return await fragment(
        view, LIST_TEMPLATE, lambda: _context(view, outcome=outcome, **extra), status=422
    )


async def _resolve(request: Request) -> Response:
    view = page_view(request)
    form = await read_form(request)
    keep = form.get("keep", "")
    if keep not in KEEPS:
        outcome = {"kind": "error", "text": view.t("conflicts.bad_choice")}
        return await fragment(
            view, LIST_TEMPLATE, lambda: _context(view, outcome=outcome), status=422
        )
    try:
        resolution = await _apply(
            view, form.get("scope", ""), form.get("id", ""), keep=keep, text=None
        )
    except OHarnessError as exc:
        return await _refused(view, exc)
    return await fragment(
        view, LIST_TEMPLATE, lambda: _context(view, outcome=_resolved(view, resolution))
    )


def _find(view: PageView, scope: str, note_id: str) -> ConflictView | None:
    for conflict in conflict_views(cloud_of(view)):
        if conflict.scope == scope and conflict.id == note_id:
            return conflict
    return None


async def _merge(request: Request) -> Response:
    view = page_view(request)
    form = await read_form(request)
    scope, note_id = form.get("scope", ""), form.get("id", "")
    values = {name: form.get(name, "") for name in ("summary", "type", "tags", "body")}
    editing = {"key": f"{scope}:{note_id}", "values": values, "errors": {}}
    conflict = _find(view, scope, note_id)
    if conflict is None:
        outcome = {"kind": "error", "text": marked(view.t, "conflicts.gone", id=note_id)}
        return await fragment(
            view, LIST_TEMPLATE, lambda: _context(view, outcome=outcome), status=422
        )
    try:
        text = hand_merged_text(
            conflict,
            summary=values["summary"],
            type=values["type"] or None,
            tags=values["tags"],
            body=values["body"],
            max_note_bytes=view.hosted.workspace.settings.memory.max_note_bytes,
        )
        resolution = await _apply(view, scope, note_id, keep=None, text=text)
    except OHarnessError as exc:
        field = exc.details.get("field")
        if field in values:
            editing["errors"] = {field: error_text(view.t, exc)}
            build = lambda: _context(view, editing=editing)  # noqa: E731
            return await fragment(view, LIST_TEMPLATE, build, status=422)
        return await _refused(view, exc, editing=editing)
    return await fragment(
        view, LIST_TEMPLATE, lambda: _context(view, outcome=_resolved(view, resolution))
    )


def _routes(router: APIRouter) -> None:
    @router.get("/conflicts/list")
    async def listing(request: Request) -> Response:
        view = page_view(request)
        return await fragment(view, LIST_TEMPLATE, lambda: _context(view))

    router.add_api_route("/conflicts/resolve", _resolve, methods=["POST"], name="page-resolve")
    router.add_api_route("/conflicts/merge", _merge, methods=["POST"], name="page-hand-merge")


SECTION = Section("conflicts", _section_context, _routes)
