"""Sync over REST (spec 07.6–07.7, 11): status, sync now, the switch, conflicts.

The same library calls as ``oharness sync …``; the Memory page uses them. Every route exists
for the default workspace (``/sync/...``) and any hosted one (``/workspaces/{id}/sync/...``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Final

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from oharness.daemon.background.sync import DaemonSync
from oharness.daemon.errors import DaemonApiError
from oharness.daemon.routes.memory import state_of
from oharness.daemon.routes.validation import MAX_TEXT_BYTES, read_object
from oharness.daemon.workspaces import DaemonWorkspace
from oharness.errors import OHarnessError
from oharness.sync.actions import (
    conflict_target,
    list_conflicts,
    resolution_json,
    resolve_conflict,
    sync_now,
    sync_status,
)
from oharness.sync.sync_service import SyncTarget

_STRING: Final = {"type": "string"}
RESOLVE_BODY = {
    "type": "object",
    "properties": {
        "keep": {"type": "string", "enum": ["local", "cloud", "both"]},
        "text": {"type": "string"},
        "scope": {"type": "string", "enum": ["project", "user"]},
    },
}


def _sync(request: Request) -> DaemonSync:
    sync = state_of(request).sync
    if sync is None:
        raise DaemonApiError(
            409, "sync_unavailable", "background sync is not running in this daemon"
        )
    return sync


def _hosted(request: Request, project_id: str | None) -> DaemonWorkspace:
    return state_of(request).workspace_for(project_id)


def _status(sync: DaemonSync, hosted: DaemonWorkspace) -> dict[str, Any]:
    return sync_status(sync.service, sync.targets(hosted))


async def _now(request: Request, project_id: str | None) -> Response:
    sync, hosted = _sync(request), _hosted(request, project_id)
    body = await read_object(request, "invalid_path")
    path = body.get("path")
    if path is None:
        targets = sync.targets(hosted)
    elif project_id is None:
        raise DaemonApiError(
            400,
            "invalid_path",
            "a folder is synced by its project: POST "
            "/workspaces/{projectId}/sync/now with the path",
        )
    else:  # another clone of the project
        targets = await _clone_targets(request, sync, project_id, path)
    outcome = await asyncio.to_thread(sync_now, sync.service, targets, run=sync.sync_now)
    data = sync_status(sync.service, targets)
    data["passes"] = outcome.passes_json()
    return JSONResponse(data)


async def _clone_targets(
    request: Request, sync: DaemonSync, project_id: str, path: object
) -> list[SyncTarget]:
    """The targets of ``path``, another folder of ``project_id`` on this machine (a second
    clone, followed by background sync once used): followed now if it was just used."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\x00" in path:
        raise DaemonApiError(400, "invalid_path", "path must be an absolute path to a folder")
    folder = os.path.realpath(path)
    if folder == os.path.realpath(_hosted(request, project_id).root):
        return sync.targets(_hosted(request, project_id))
    follower = state_of(request).follower
    if follower is not None:
        await asyncio.to_thread(follower.follow)
    targets = sync.folder_targets(folder, project_id)
    if targets is None:
        raise DaemonApiError(
            404,
            "folder_not_followed",
            f"{path} is not a folder of project {project_id} that this machine used: open its "
            "memory there once (any oharness command, or an agent's session)",
        )
    return targets


async def _resolve(request: Request, project_id: str | None, note_id: str) -> Response:
    sync, hosted = _sync(request), _hosted(request, project_id)
    data = await read_object(request, "invalid_resolution")
    keep, text, scope = data.get("keep"), data.get("text"), data.get("scope")
    if (keep is None) == (text is None):
        raise DaemonApiError(400, "invalid_resolution", "send exactly one of keep or text")
    if keep is not None and keep not in ("local", "cloud", "both"):
        raise DaemonApiError(400, "invalid_resolution", "keep must be local, cloud or both")
    if text is not None and (
        not isinstance(text, str) or len(text.encode("utf-8", "replace")) > 2 * MAX_TEXT_BYTES
    ):
        raise DaemonApiError(400, "invalid_resolution", "text must be a note's text")
    if scope is not None and scope not in ("project", "user"):
        raise DaemonApiError(400, "invalid_scope", "scope must be 'project' or 'user'")
    try:
        target = conflict_target(sync.service, sync.targets(hosted), note_id, scope)
        resolution = await asyncio.to_thread(
            resolve_conflict,
            sync.service,
            target,
            hosted.workspace.service.backups(),
            note_id,
            keep=keep,
            text=text,
            clock=state_of(request).options.clock,
            max_note_bytes=hosted.workspace.settings.memory.max_note_bytes,
        )
    except OHarnessError as exc:
        raise DaemonApiError(409 if exc.code != "invalid" else 400, exc.code, exc.message) from exc
    # The next pass uploads it (sync wakes for the scope); subscribers hear memory_changed.
    state_of(request).changed(hosted, target.scope, "api")
    return JSONResponse(resolution_json(resolution))


def sync_router() -> APIRouter:
    router = APIRouter()
    for prefix in ("", "/workspaces/{project_id}"):
        _add_routes(router, prefix)

    async def switch(request: Request, enabled: bool) -> Response:
        sync = _sync(request)
        await asyncio.to_thread(sync.set_enabled, enabled)
        return JSONResponse({"enabled": enabled})

    @router.post("/sync/on")
    async def sync_on(request: Request) -> Response:
        return await switch(request, True)

    @router.post("/sync/off")
    async def sync_off(request: Request) -> Response:
        return await switch(request, False)

    return router


_PROJECT_ID: Final = {"name": "project_id", "in": "path", "required": True, "schema": _STRING}
_NOTE_ID: Final = {"name": "note_id", "in": "path", "required": True, "schema": _STRING}


def _add_routes(router: APIRouter, prefix: str) -> None:
    """The routes of one prefix. Their endpoints read the path parameters themselves: a
    default route has no ``project_id`` (as a query parameter it would pick a workspace)."""
    qualified = bool(prefix)

    def project_of(request: Request) -> str | None:
        return str(request.path_params["project_id"]) if qualified else None

    async def status(request: Request) -> Response:
        return JSONResponse(_status(_sync(request), _hosted(request, project_of(request))))

    async def now(request: Request) -> Response:
        return await _now(request, project_of(request))

    async def conflicts(request: Request) -> Response:
        sync, hosted = _sync(request), _hosted(request, project_of(request))
        found = await asyncio.to_thread(list_conflicts, sync.service, sync.targets(hosted))
        return JSONResponse({"conflicts": found})

    async def resolve(request: Request) -> Response:
        return await _resolve(request, project_of(request), str(request.path_params["note_id"]))

    suffix = "_qualified" if qualified else ""
    where = [_PROJECT_ID] if qualified else []
    plain = {"parameters": where}
    body = {
        "parameters": [*where, _NOTE_ID],
        "requestBody": {"content": {"application/json": {"schema": RESOLVE_BODY}}},
    }
    for path, endpoint, method, name in (
        ("/sync/status", status, "GET", "status"),
        ("/sync/now", now, "POST", "now"),
        ("/sync/conflicts", conflicts, "GET", "conflicts"),
    ):
        router.add_api_route(
            prefix + path, endpoint, methods=[method], openapi_extra=plain, name=name + suffix
        )
    router.add_api_route(
        f"{prefix}/sync/conflicts/{{note_id}}/resolve",
        resolve,
        methods=["POST"],
        openapi_extra=body,
        name="resolve" + suffix,
    )
