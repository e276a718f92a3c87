"""Checking task requests (spec 10.1), in the documented order: content or query, contextMode,
scope, client id. Each refusal is a 400 with a stable code; nothing is queued."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from starlette.requests import Request

from oharness.capture.extraction_pass import CaptureJob
from oharness.daemon.errors import DaemonApiError
from oharness.daemon.guards import MAX_BODY_BYTES, read_capped
from oharness.daemon.tasks.lane import TaskKind

__all__ = ["MAX_BODY_BYTES", "MAX_TEXT_BYTES", "TaskRequest", "read_object", "task_request"]

MAX_TEXT_BYTES: Final = 64 * 1024
CONTEXT_MODES: Final = ("workspace", "clean")
CLIENT_ID_HEADERS: Final = ("x-oharness-client-id", "x-qwen-client-id")
_CLIENT_ID: Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")


@dataclass(frozen=True)
class TaskRequest:
    kind: TaskKind
    payload: str
    client_id: str | None
    context_mode: str | None = None
    scope: str | None = None


async def read_object(request: Request, code: str) -> dict[str, Any]:
    """The JSON object of a request body (empty body → ``{}``), or a 400 with ``code``; a body
    over :data:`MAX_BODY_BYTES` is refused (413) while it streams, never held whole."""
    raw = await read_capped(request.stream())
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DaemonApiError(400, code, "the request body is not valid JSON") from exc
    if not isinstance(data, dict):
        raise DaemonApiError(400, code, "the request body must be a JSON object")
    return data


def _text(data: dict[str, Any], key: str, code: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise DaemonApiError(400, code, f"{key} is required and must be a string")
    trimmed = value.strip()
    if not trimmed:
        raise DaemonApiError(400, code, f"{key} is empty")
    try:
        size = len(trimmed.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a lone surrogate
        raise DaemonApiError(400, code, f"{key} is not valid Unicode text") from exc
    if size > MAX_TEXT_BYTES:
        raise DaemonApiError(
            400, code, f"{key} is {size} bytes after trimming; at most {MAX_TEXT_BYTES}"
        )
    return trimmed


def _scope(data: dict[str, Any]) -> str | None:
    value = data.get("scope")
    if value is None:
        return None
    if value not in ("project", "user"):
        raise DaemonApiError(
            400, "invalid_scope", "scope must be 'project' or 'user' (or left out)"
        )
    return str(value)


def client_id_of(request: Request) -> str | None:
    """The caller's client id (``X-OHarness-Client-Id``, alias ``X-Qwen-Client-Id``)."""
    for header in CLIENT_ID_HEADERS:
        value = request.headers.get(header)
        if value is not None:
            if not _CLIENT_ID.fullmatch(value):
                raise DaemonApiError(
                    400,
                    "invalid_client_id",
                    "the client id must be 1-128 characters of A-Z a-z 0-9 . _ : -",
                )
            return value
    return None


async def task_request(request: Request, kind: TaskKind) -> TaskRequest:
    """Validate a POST for a task of ``kind``."""
    if kind == "remember":
        data = await read_object(request, "invalid_content")
        content = _text(data, "content", "invalid_content")
        mode = data.get("contextMode", "workspace")
        if mode is None:
            mode = "workspace"
        if mode not in CONTEXT_MODES:
            raise DaemonApiError(
                400, "invalid_context_mode", "contextMode must be 'workspace' or 'clean'"
            )
        scope = _scope(data)
        return TaskRequest(kind, content, client_id_of(request), str(mode), scope)
    if kind == "forget":
        data = await read_object(request, "invalid_query")
        query = _text(data, "query", "invalid_query")
        scope = _scope(data)
        return TaskRequest(kind, query, client_id_of(request), None, scope)
    if kind == "capture":
        data = await read_object(request, "invalid_capture")
        try:
            job = CaptureJob.from_dict(data)
        except ValueError as exc:
            raise DaemonApiError(400, "invalid_capture", str(exc)) from exc
        return TaskRequest(kind, json.dumps(job.to_dict()), client_id_of(request))
    await read_object(request, "invalid_request")
    return TaskRequest(kind, "", client_id_of(request))
