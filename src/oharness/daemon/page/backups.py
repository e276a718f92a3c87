"""The page's Backups (spec 11, section 5; 02.5): the fifty newest with when and why, restore.

The list is :func:`oharness.memory.backup_list.backup_listing` (this workspace's backups: its
project folder's, the user folder's, and legacy ones with no recorded origin). Restore is
:func:`oharness.memory.backup_list.restore_backup` — :meth:`MemoryService.restore`, which backs up
the version it replaces (``restore-replace``). When the note there now is a newer, different
version the first request is answered with a confirmation (422) and changes nothing; the
confirmation sends ``confirmed=1``. The list refreshes on ``memory_changed`` and ``notes_changed``.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from oharness.daemon.page.backup_preview import backup_preview
from oharness.daemon.page.messages import error_text
from oharness.daemon.page.render import marked
from oharness.daemon.page.threaded import fragment
from oharness.daemon.page.view import PageView, Section, page_view, read_form
from oharness.errors import OHarnessError
from oharness.memory.backup_list import PAGE_LIMIT, backup_listing, restore_backup
from oharness.notes.backups import BACKUP_REASONS

LIST_TEMPLATE: Final = "backups/list.html"


def _context(
    view: PageView,
    *,
    outcome: dict[str, Any] | None = None,
    confirm: str | None = None,
    preview: str | None = None,
) -> dict[str, Any]:
    service = view.hosted.workspace.service
    entries = backup_listing(service, PAGE_LIMIT)
    shown = preview or confirm  # a confirmation shows what restoring brings back
    return {
        "preview": backup_preview(service, shown) if shown else None,
        "entries": entries,
        "limit": PAGE_LIMIT,
        "known_reasons": frozenset(BACKUP_REASONS),
        "outcome": outcome,
        "confirm": confirm,
    }


def _section_context(view: PageView) -> dict[str, Any]:
    return _context(view)


async def _restore(request: Request) -> Response:
    view = page_view(request)
    form = await read_form(request)
    backup_id = form.get("backup", "")
    confirmed = form.get("confirmed") == "1"
    service = view.hosted.workspace.service
    try:
        result = await asyncio.to_thread(restore_backup, service, backup_id, confirmed=confirmed)
    except OHarnessError as exc:
        if exc.details.get("reason") == "replaces_newer":
            build = lambda: _context(view, confirm=backup_id)  # noqa: E731
            return await fragment(view, LIST_TEMPLATE, build, status=422)
        outcome = {"kind": "error", "text": error_text(view.t, exc)}
        return await fragment(
            view, LIST_TEMPLATE, lambda: _context(view, outcome=outcome), status=422
        )
    if result.changed:
        view.changed(result.scope)
        key = "backups.restored_replaced" if result.replaced_backup_id else "backups.restored"
    else:
        key = "backups.already_current"
    text = marked(view.t, key, id=result.id, backup=result.replaced_backup_id or "")
    return await fragment(
        view, LIST_TEMPLATE, lambda: _context(view, outcome={"kind": "done", "text": text})
    )


def _routes(router: APIRouter) -> None:
    @router.get("/backups/list")
    async def listing(request: Request) -> Response:
        view = page_view(request)
        return await fragment(view, LIST_TEMPLATE, lambda: _context(view))

    @router.get("/backups/preview")
    async def preview(request: Request) -> Response:
        view = page_view(request)
        backup_id = request.query_params.get("backup", "")
        try:
            return await fragment(view, LIST_TEMPLATE, lambda: _context(view, preview=backup_id))
        except OHarnessError as exc:
            outcome = {"kind": "error", "text": error_text(view.t, exc)}
            return await fragment(
                view, LIST_TEMPLATE, lambda: _context(view, outcome=outcome), status=422
            )

    router.add_api_route("/backups/restore", _restore, methods=["POST"], name="page-restore")


SECTION = Section("backups", _section_context, _routes)
