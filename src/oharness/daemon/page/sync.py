"""The page's Cloud sync (spec 11, section 2; 07.6–07.7): the switch and sync now for both
scopes, and everything the status says.

- The panel is :func:`oharness.sync.panel.sync_panel` over the same combined status as ``oharness
  sync status`` and ``GET /sync/status``; it refreshes itself on every ``sync_status`` event.
- 关闭云同步 / 开启云同步 flips the one switch (``syncEnabled``) through the daemon's background
  sync when it runs (a pass in flight is cancelled), else through the settings directly.
- 立即同步 runs a pass per scope at once through the coordinator (``sync now``'s rules: never
  while switched off, signed out, or under a 429 deadline — then the page says why, 422).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fastapi import APIRouter
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response

from oharness.daemon.events import Event
from oharness.daemon.page.cloud import Cloud, cloud_of
from oharness.daemon.page.messages import note_error_text, pause_text, sync_error_text
from oharness.daemon.page.render import command, marked
from oharness.daemon.page.threaded import fragment
from oharness.daemon.page.view import PageView, Section, page_view, read_form
from oharness.errors import OHarnessError
from oharness.sync.actions import used_project_statuses
from oharness.sync.client import SyncClient
from oharness.sync.encryption import account_client, load_key
from oharness.sync.panel import SyncPanel, sync_panel
from oharness.sync.sync_service import PassReport, combined_status

STATUS_TEMPLATE = "sync/status.html"


def current_panel(view: PageView, cloud: Cloud) -> SyncPanel:
    """The panel now (the page counts as using the project: its notes are checked)."""
    for listener in view.state.use_listeners:
        listener(view.hosted)
    service = cloud.service
    combined = combined_status(
        [service.status(target) for target in cloud.targets], service.settings.enabled()
    )
    return sync_panel(combined, signed_in=cloud.signed_in, now=view.state.options.clock())


def _said(view: PageView, panel: SyncPanel) -> dict[str, dict[str, Any]]:
    """Each scope's pause reason, error and note problems, in the reader's language."""
    return {
        scope.scope: {
            "paused": pause_text(view.t, scope.paused) if scope.paused else None,
            "error": sync_error_text(view.t, scope.error.code) if scope.error else None,
            "note_errors": [note_error_text(view.t, issue.code) for issue in scope.note_errors],
        }
        for scope in panel.scopes
    }


def _context(
    view: PageView, outcome: Mapping[str, Any] | None = None, panel: SyncPanel | None = None
) -> dict[str, Any]:
    """Everything the Cloud sync panel shows (``panel``: already read by the caller)."""
    cloud = cloud_of(view)
    panel = panel or current_panel(view, cloud)
    projects = used_project_statuses(cloud.service)  # when each project last synced
    held = load_key(cloud.service.home)
    return {
        "panel": panel,
        "said": _said(view, panel),
        "outcome": outcome,
        "projects": projects,
        "end_to_end": held is not None and held.active,
        # A pass paused because the account is encrypted and this machine holds no key.
        "locked": any(str(scope.paused or "").startswith("encrypted:") for scope in panel.scopes),
    }


def _reported(view: PageView, reports: list[PassReport]) -> dict[str, Any]:
    """What a sync now did, per scope, for the person."""
    lines = []
    failed = False
    for report in reports:
        label = view.t(f"sync.scope.{report.target.scope}")
        if report.error is not None:
            failed = True
            code = str(report.error.get("code") or "error")
            text = marked(view.t, "sync.outcome.error", message=sync_error_text(view.t, code))
        elif report.paused:
            failed = True
            text = marked(view.t, "sync.outcome.paused", reason=pause_text(view.t, report.paused))
        elif report.result is not None:
            result = report.result
            text = marked(
                view.t,
                "sync.outcome.done",
                sent=len(result.pushed),
                received=len(result.pulled),
                merged=len(result.merged),
                conflicts=len(result.conflicts),
            )
            failed = failed or bool(result.conflicts or result.failed)
        else:
            continue
        lines.append({"scope": label, "text": text})
    return {"kind": "error" if failed else "done", "lines": lines}


def _run_now(cloud: Cloud) -> list[PassReport]:
    reports: list[PassReport] = []
    for target in cloud.targets:
        if cloud.running is not None:
            reports.extend(cloud.running.sync_now(target))
        else:
            reports.append(cloud.service.run(target))
    return reports


async def _now(request: Request) -> Response:
    view = page_view(request)
    cloud = cloud_of(view)
    panel = current_panel(view, cloud)
    refusal = panel.sync_now_refusal
    if refusal is not None:
        text = marked(
            view.t,
            f"sync.refused.{refusal}",
            time=Markup(escape(view.t.moment(panel.retry_at))),
            command=command("oharness login --origin URL"),
        )
        outcome = {"kind": "refused", "lines": [{"scope": "", "text": text}]}
        context = _context(view, outcome, panel)
        return await fragment(view, STATUS_TEMPLATE, lambda: context, status=422)
    reports = await asyncio.to_thread(_run_now, cloud)
    return await fragment(view, STATUS_TEMPLATE, lambda: _context(view, _reported(view, reports)))


async def _switch(request: Request) -> Response:
    view = page_view(request)
    form = await read_form(request)
    enabled = form.get("enabled") == "1"
    cloud = cloud_of(view)
    if cloud.running is not None:  # it tells every page (a sync_status event)
        await asyncio.to_thread(cloud.running.set_enabled, enabled)
    else:
        await asyncio.to_thread(cloud.service.settings.set_enabled, enabled)
        change = "switched_on" if enabled else "switched_off"
        view.state.bus.publish(Event("sync_status", {"change": change}))
    key = "sync.outcome.switched_on" if enabled else "sync.outcome.switched_off"
    outcome = {"kind": "done", "lines": [{"scope": "", "text": view.t(key)}]}
    return await fragment(view, STATUS_TEMPLATE, lambda: _context(view, outcome))


def _encrypt(view: PageView, form: Mapping[str, str]) -> dict[str, Any]:
    """Turn end-to-end encryption on from the panel's form (oharness sync encrypt)."""
    from oharness.sync.encryption import turn_on

    passphrase = form.get("passphrase", "")
    if passphrase != form.get("again", "") or not passphrase:
        return {"kind": "refused", "text": view.t("sync.e2e.mismatch")}
    if form.get("understood") != "1":
        return {"kind": "refused", "text": view.t("sync.e2e.loss")}
    shown: list[str] = []
    with _account_client(view) as client:
        done = turn_on(cloud_of(view).service.home, client, passphrase, show_recovery=shown.append)
    lines = [view.t("sync.e2e.done", notes=done.notes, scopes=done.scopes)]
    lines += [marked(view.t, "sync.e2e.recovery", recovery=shown_key) for shown_key in shown]
    return {"kind": "done", "lines": [{"scope": "", "text": line} for line in lines]}


def _unlock(view: PageView, form: Mapping[str, str]) -> dict[str, Any]:
    """Enter the passphrase of an encrypted account from the panel (oharness sync unlock)."""
    from oharness.sync.encryption import unlock

    with _account_client(view) as client:
        unlock(
            cloud_of(view).service.home,
            client,
            passphrase=form.get("passphrase", ""),
            recovery_key=None,
        )
    return {"kind": "done", "text": view.t("sync.e2e.unlocked")}


@contextlib.contextmanager
def _account_client(view: PageView) -> Iterator[SyncClient]:
    service = cloud_of(view).service
    client = account_client(service.home, service.environ_token)
    try:
        yield client
    finally:
        client.close()


async def _e2e(request: Request, action: Callable[..., dict[str, Any]]) -> Response:
    view = page_view(request)
    form = await read_form(request)
    try:
        outcome = await asyncio.to_thread(action, view, form)
    except OHarnessError as exc:
        outcome = {"kind": "refused", "text": view.t("sync.e2e.refused", message=exc.message)}
    status = 422 if outcome["kind"] == "refused" else 200
    return await fragment(view, STATUS_TEMPLATE, lambda: _context(view, outcome), status=status)


def _routes(router: APIRouter) -> None:
    @router.get("/sync/status")
    async def status(request: Request) -> Response:
        view = page_view(request)
        return await fragment(view, STATUS_TEMPLATE, lambda: _context(view))

    router.add_api_route("/sync/now", _now, methods=["POST"], name="page-sync-now")
    router.add_api_route("/sync/switch", _switch, methods=["POST"], name="page-sync-switch")

    @router.post("/sync/encrypt")
    async def encrypt(request: Request) -> Response:
        return await _e2e(request, _encrypt)

    @router.post("/sync/unlock")
    async def unlock(request: Request) -> Response:
        return await _e2e(request, _unlock)


SECTION = Section("sync", _context, _routes)
