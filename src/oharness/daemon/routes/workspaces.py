"""Workspaces, the event stream and the page's sign-in (spec 10, 10.2)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from oharness.daemon.auth import COOKIE_NAME
from oharness.daemon.errors import DaemonApiError
from oharness.daemon.page.signin import signed_in
from oharness.daemon.routes.memory import state_of
from oharness.daemon.routes.validation import read_object
from oharness.project.paths import HomeLayout
from oharness.project.used import forget_folder


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def workspaces_router() -> APIRouter:
    router = APIRouter()

    @router.get("/events")
    async def events(
        request: Request, workspace: str | None = None, since: int | None = None
    ) -> Response:
        state = state_of(request)
        if workspace is not None:
            state.registry.get(workspace)  # 404 for a workspace this daemon does not host
        watcher = state.note_watcher  # a page tells what it showed: it hears what came since
        subscription = (
            watcher.subscribe(workspace, since) if watcher else state.bus.subscribe(workspace)
        )
        return StreamingResponse(
            state.bus.stream(subscription, heartbeat=state.options.heartbeat),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    _workspace_routes(router)

    @router.get("/auth", include_in_schema=False)
    async def page_sign_in(request: Request, code: str = "") -> Response:
        state = state_of(request)
        state.auth.check_host(request)
        state.auth.redeem(request, code)
        response = signed_in(request)  # a page that goes on to /memory
        response.set_cookie(
            COOKIE_NAME, state.auth.session, httponly=True, samesite="strict", path="/"
        )
        return response

    @router.post("/auth/link", include_in_schema=False)
    async def new_sign_in_link(request: Request) -> Response:
        """A new one-time sign-in link for a browser (``oharness setup`` prints it)."""
        return JSONResponse({"url": state_of(request).auth.new_page_url(str(request.base_url))})

    @router.get("/auth/csrf")
    async def csrf(request: Request) -> Response:
        return JSONResponse({"csrfToken": state_of(request).auth.csrf_token})

    return router


def _workspace_routes(router: APIRouter) -> None:
    """List, register and remove workspaces (10.2)."""

    @router.get("/workspaces")
    async def list_workspaces(request: Request) -> Response:
        state = state_of(request)
        return JSONResponse({"workspaces": [w.describe() for w in state.registry.all()]})

    workspace_body = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "create": {"type": "boolean"}},
        "required": ["path"],
    }

    @router.post("/workspaces", openapi_extra=_json_body(workspace_body))
    async def add_workspace(request: Request) -> Response:
        state = state_of(request)
        data = await read_object(request, "invalid_path")
        path = data.get("path")
        if not isinstance(path, str) or not path or "\x00" in path:
            raise DaemonApiError(400, "invalid_path", "path must be an absolute path to a folder")
        create = data.get("create", False)
        if not isinstance(create, bool):
            raise DaemonApiError(400, "invalid_path", "create must be true or false")
        hosted, added = state.registry.register(Path(path), home=state.options.home, create=create)
        return JSONResponse(hosted.describe(), status_code=201 if added else 200)

    @router.delete("/workspaces/{project_id}")
    async def remove_workspace(request: Request, project_id: str) -> Response:
        state = state_of(request)
        hosted = await state.registry.remove(project_id)
        # Background sync no longer follows it (nor another clone of it on this machine),
        # until something uses the project again.
        forget_folder(HomeLayout(state.options.home), hosted.root)
        if state.follower is not None and hosted.project_id is not None:
            await asyncio.to_thread(state.follower.forget_project, hosted.project_id)
        return JSONResponse({"removed": hosted.project_id})
