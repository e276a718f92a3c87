"""The sessionless memory task routes (spec 10.1) and ``/capabilities``.

Plain paths act on the default workspace, ``/workspaces/{projectId}/memory/...`` on another
hosted one. Checks run in the documented order: auth (the middleware), body validation,
availability, enqueue.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from oharness.daemon.errors import DaemonApiError
from oharness.daemon.routes.validation import CONTEXT_MODES, client_id_of, task_request
from oharness.daemon.sanitize import sanitise_details
from oharness.daemon.state import DaemonState
from oharness.daemon.tasks.lane import TASK_KINDS, TaskKind
from oharness.daemon.workspaces import DaemonWorkspace
from oharness.errors import OHarnessError

log = logging.getLogger(__name__)

#: Python's whitespace (what ``str.strip`` removes), spelled out so that JSON Schema's
#: ECMAScript regexes and Python's agree: the text must hold something else.
NOT_BLANK: Final = (
    "[^\\t\\n\\u000b\\u000c\\r\\u001c-\\u001f \\u0085\\u00a0\\u1680"
    "\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
)
_STRING_64K: Final = {"type": "string", "minLength": 1, "maxLength": 65536, "pattern": NOT_BLANK}
#: Left out and ``null`` mean the same: the scope the rules infer.
_SCOPE: Final = {"enum": ["project", "user", None]}
#: The capture job's paths: absolute, as the daemon's own working folder means nothing to them.
_ABSOLUTE_PATH: Final = {"type": "string", "minLength": 1, "pattern": "^/"}
_CLIENT_HEADER: Final = {
    "name": "X-OHarness-Client-Id",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$"},
}
BODIES: Final[dict[str, dict[str, Any]]] = {
    "remember": {
        "type": "object",
        "properties": {
            "content": _STRING_64K,
            "contextMode": {"enum": [*CONTEXT_MODES, None]},
            "scope": _SCOPE,
        },
        "required": ["content"],
    },
    "forget": {
        "type": "object",
        "properties": {"query": _STRING_64K, "scope": _SCOPE},
        "required": ["query"],
    },
    "dream": {"type": "object"},
    "capture": {
        "type": "object",
        "properties": {
            "agent": {"enum": ["claude-code", "codex"]},
            "event": {"enum": ["stop", "pre-compact", "session-end"]},
            "sessionId": {"type": "string", "minLength": 1},
            "transcriptPath": _ABSOLUTE_PATH,
            "projectRoot": _ABSOLUTE_PATH,
        },
        "required": ["agent", "event", "sessionId", "transcriptPath", "projectRoot"],
    },
}


def state_of(request: Request) -> DaemonState:
    state: DaemonState = request.app.state.daemon
    return state


def _openapi(kind: str) -> dict[str, Any]:
    return {
        "parameters": [_CLIENT_HEADER],
        "requestBody": {
            "required": kind != "dream",
            "content": {"application/json": {"schema": BODIES[kind]}},
        },
    }


def probe_memory(hosted: DaemonWorkspace, kind: str) -> None:
    """The availability check: 409 when memory is off, 500 when it cannot be told."""
    try:
        enabled = hosted.memory_enabled()
    except OHarnessError as exc:
        message = sanitise_details(exc.message)
        log.warning("memory availability probe failed: %s", message)
        raise DaemonApiError(
            500, f"{kind}_failed", f"cannot tell whether memory is on: {message}"
        ) from exc
    if not enabled:
        raise DaemonApiError(
            409,
            "managed_memory_unavailable",
            "the memory plugin is switched off (plugins.json); switch it on to use memory tasks",
        )


async def _post(request: Request, kind: TaskKind, project_id: str | None) -> Response:
    state = state_of(request)
    hosted = state.workspace_for(project_id)
    parsed = await task_request(request, kind)
    probe_memory(hosted, kind)
    task = hosted.lane.submit(
        kind,
        parsed.payload,
        client_id=parsed.client_id,
        context_mode=parsed.context_mode,
        scope=parsed.scope,
    )
    return JSONResponse(task.snapshot(), status_code=202)


def _get(request: Request, kind: TaskKind, task_id: str, project_id: str | None) -> Response:
    state = state_of(request)
    hosted = state.workspace_for(project_id)
    client_id = client_id_of(request)
    task = hosted.lane.get(kind, task_id, client_id)
    if task is None:
        raise DaemonApiError(
            404, f"{kind}_task_not_found", f"no {kind} task {task_id!r} for this client"
        )
    return JSONResponse(task.snapshot())


def _add_kind(router: APIRouter, kind: TaskKind) -> None:
    async def post_default(request: Request) -> Response:
        return await _post(request, kind, None)

    async def post_qualified(request: Request, project_id: str) -> Response:
        return await _post(request, kind, project_id)

    async def get_default(request: Request, task_id: str) -> Response:
        return _get(request, kind, task_id, None)

    async def get_qualified(request: Request, project_id: str, task_id: str) -> Response:
        return _get(request, kind, task_id, project_id)

    extra = _openapi(kind)
    getter = {"parameters": [_CLIENT_HEADER]}
    router.add_api_route(
        f"/workspace/memory/{kind}",
        post_default,
        methods=["POST"],
        openapi_extra=extra,
        name=f"{kind}_default",
        status_code=202,
    )
    router.add_api_route(
        f"/workspaces/{{project_id}}/memory/{kind}",
        post_qualified,
        methods=["POST"],
        openapi_extra=extra,
        name=f"{kind}_qualified",
        status_code=202,
    )
    router.add_api_route(
        f"/workspace/memory/{kind}/{{task_id}}",
        get_default,
        methods=["GET"],
        openapi_extra=getter,
        name=f"{kind}_poll_default",
    )
    router.add_api_route(
        f"/workspaces/{{project_id}}/memory/{kind}/{{task_id}}",
        get_qualified,
        methods=["GET"],
        openapi_extra=getter,
        name=f"{kind}_poll_qualified",
    )


def capabilities(state: DaemonState) -> dict[str, Any]:
    """What this daemon offers; dream only when a consolidation path is installed."""
    found: dict[str, Any] = {
        "workspace_memory_remember": {"since": "v1", "modes": list(CONTEXT_MODES)},
        "workspace_memory_forget": {"since": "v1"},
        "events": {"since": "v1"},
        "workspace_recall": {"since": "v1"},
        "workspaces": {"since": "v1"},
        "sync": {"since": "v1"},
        # list, search and show notes; list and restore backups (routes.notes)
        "workspace_memory_notes": {"since": "v1"},
        "workspace_memory_backups": {"since": "v1"},
    }
    if state.options.dreamer is not None:
        found["workspace_memory_dream"] = {"since": "v1"}
    if state.options.capturer is not None:
        found["workspace_memory_capture"] = {"since": "v1"}
    return {"capabilities": found}


def memory_router() -> APIRouter:
    router = APIRouter()
    for kind in TASK_KINDS:
        _add_kind(router, kind)

    @router.get("/capabilities")
    async def get_capabilities(request: Request) -> Response:
        return JSONResponse(capabilities(state_of(request)))

    return router
