"""Events, recall, workspaces and the page's sign-in (spec 10, 10.2, 03.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from oharness.daemon.auth import COOKIE_NAME
from oharness.daemon.errors import ApiError
from oharness.daemon.events import Event
from oharness.daemon.routes_memory import probe_memory, state_of
from oharness.daemon.validation import MAX_TEXT_BYTES, read_object
from oharness.daemon.workspaces import DaemonWorkspace
from oharness.tools.attach import recall_for_message
from oharness.tools.scope_recall import NoteKey

MAX_EXCLUDE: Final = 1000
RECALL_BODY: Final = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "maxLength": 65536},
        "exclude": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EXCLUDE},
    },
    "required": ["message"],
}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _exclusions(value: object) -> list[NoteKey | str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_EXCLUDE:
        raise ApiError(
            400, "invalid_exclude", f"exclude must be a list of at most {MAX_EXCLUDE} ids"
        )
    found: list[NoteKey | str] = []
    for item in value:
        if not isinstance(item, str) or len(item) > 200:
            raise ApiError(400, "invalid_exclude", "each exclude item is an id or 'scope:id'")
        scope, sep, note_id = item.partition(":")
        if sep and scope == "project":
            found.append(("project", note_id))
        elif sep and scope == "user":
            found.append(("user", note_id))
        else:
            found.append(item)
    return found


def _recall(request: Request, hosted: DaemonWorkspace, data: dict[str, Any]) -> Response:
    message = data.get("message")
    if not isinstance(message, str):
        raise ApiError(400, "invalid_message", "message is required and must be a string")
    try:
        too_long = len(message.encode("utf-8")) > MAX_TEXT_BYTES
    except UnicodeEncodeError as exc:
        raise ApiError(400, "invalid_message", "message is not valid Unicode text") from exc
    if too_long:
        raise ApiError(400, "invalid_message", f"message is over {MAX_TEXT_BYTES} bytes")
    exclude = _exclusions(data.get("exclude"))
    probe_memory(hosted, "recall")
    recall = hosted.workspace.service.recall
    if recall is None:
        return JSONResponse({"block": "", "attached": [], "linked": []})
    outcome = recall_for_message(recall, message, exclude, record=False)
    state = state_of(request)
    if outcome.attached:  # usage counts are written off the request path
        keys = [(note.scope, note.id) for note in outcome.attached]
        state.background.submit(recall.record_usage, keys)
    for listener in state.use_listeners:
        listener(hosted)
    if outcome.attached:
        state.bus.publish(
            Event("recalled", {"count": len(outcome.attached)}, workspace=hosted.project_id)
        )
    return JSONResponse(outcome.to_dict())


def api_router() -> APIRouter:
    router = APIRouter()

    @router.post("/workspace/recall", openapi_extra=_json_body(RECALL_BODY))
    async def recall_default(request: Request) -> Response:
        state = state_of(request)
        data = await read_object(request, "invalid_message")
        return _recall(request, state.registry.default, data)

    @router.post("/workspaces/{project_id}/recall", openapi_extra=_json_body(RECALL_BODY))
    async def recall_qualified(request: Request, project_id: str) -> Response:
        state = state_of(request)
        hosted = state.registry.get(project_id)
        data = await read_object(request, "invalid_message")
        return _recall(request, hosted, data)

    @router.get("/events")
    async def events(request: Request, workspace: str | None = None) -> Response:
        state = state_of(request)
        subscription = state.bus.subscribe(workspace)
        return StreamingResponse(
            state.bus.stream(subscription, heartbeat=state.options.heartbeat),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

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
            raise ApiError(400, "invalid_path", "path must be an absolute path to a folder")
        create = data.get("create", False)
        if not isinstance(create, bool):
            raise ApiError(400, "invalid_path", "create must be true or false")
        hosted, added = state.registry.register(Path(path), create=create)
        return JSONResponse(hosted.describe(), status_code=201 if added else 200)

    @router.delete("/workspaces/{project_id}")
    async def remove_workspace(request: Request, project_id: str) -> Response:
        state = state_of(request)
        hosted = await state.registry.remove(project_id)
        return JSONResponse({"removed": hosted.project_id})

    @router.get("/auth", include_in_schema=False)
    async def page_sign_in(request: Request, code: str = "") -> Response:
        state = state_of(request)
        state.auth.check_host(request)
        if not state.auth.redeem(code):
            raise ApiError(401, "token_required", "this sign-in link was already used or is wrong")
        response = PlainTextResponse("Signed in: this browser can now use the oharness daemon.")
        response.set_cookie(
            COOKIE_NAME, state.auth.session, httponly=True, samesite="strict", path="/"
        )
        return response

    @router.get("/auth/csrf")
    async def csrf(request: Request) -> Response:
        return JSONResponse({"csrfToken": state_of(request).auth.csrf_token})

    return router
