"""The recall endpoint for other harnesses' per-message hooks (spec 10, 03.2), on a fast path.

``POST /workspace/recall`` and ``POST /workspaces/{projectId}/recall`` take ``{"message",
"exclude"?}`` and answer ``{"attached", "linked", "block"}``. A hook waits for this on every
prompt, so :class:`~oharness.daemon.app.DaemonApp` sends these two paths straight to
:class:`RecallFastPath` after the auth checks, in front of the framework's middleware stack and
router: no error, telemetry or body-limit layers, no routing over every route, no dependency
solving, no per-request objects beyond the JSON. Their OpenAPI description is added to the
generated document by :func:`add_recall_paths`, so schema-driven clients and fuzzers see them
like any other route.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oharness.daemon.errors import DaemonApiError
from oharness.daemon.events import Event
from oharness.daemon.guards import MAX_BODY_BYTES, body_too_large
from oharness.daemon.routes.memory import probe_memory
from oharness.daemon.routes.validation import MAX_TEXT_BYTES
from oharness.daemon.sanitize import sanitise_details
from oharness.daemon.state import DaemonState
from oharness.daemon.workspaces import DaemonWorkspace
from oharness.memory.attach import recall_for_message
from oharness.memory.scope_recall import NoteKey

log = logging.getLogger(__name__)

MAX_EXCLUDE: Final = 1000
DEFAULT_PATH: Final = "/workspace/recall"
_QUALIFIED_PREFIX: Final = "/workspaces/"
_SUFFIX: Final = "/recall"
_JSON_HEADERS: Final = [(b"content-type", b"application/json")]
RECALL_BODY: Final = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "maxLength": 65536},
        "exclude": {
            "type": ["array", "null"],
            "items": {"type": "string", "maxLength": 200},
            "maxItems": MAX_EXCLUDE,
        },
    },
    "required": ["message"],
}


def recall_target(path: str) -> tuple[bool, str | None]:
    """``(True, None)`` for the default route, ``(True, id)`` for a qualified one, else
    ``(False, None)`` (the path is not a recall route)."""
    if path == DEFAULT_PATH:
        return True, None
    if path.startswith(_QUALIFIED_PREFIX) and path.endswith(_SUFFIX):
        project_id = path[len(_QUALIFIED_PREFIX) : -len(_SUFFIX)]
        if project_id and "/" not in project_id:
            return True, project_id
    return False, None


def _exclusions(value: object) -> list[NoteKey | str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_EXCLUDE:
        raise DaemonApiError(
            400, "invalid_exclude", f"exclude must be a list of at most {MAX_EXCLUDE} ids"
        )
    found: list[NoteKey | str] = []
    for item in value:
        if not isinstance(item, str) or len(item) > 200:
            raise DaemonApiError(400, "invalid_exclude", "each exclude item is an id or 'scope:id'")
        scope, sep, note_id = item.partition(":")
        if sep and scope == "project":
            found.append(("project", note_id))
        elif sep and scope == "user":
            found.append(("user", note_id))
        else:
            found.append(item)
    return found


def _message(data: dict[str, Any]) -> str:
    message = data.get("message")
    if not isinstance(message, str):
        raise DaemonApiError(400, "invalid_message", "message is required and must be a string")
    try:
        too_long = len(message.encode("utf-8")) > MAX_TEXT_BYTES
    except UnicodeEncodeError as exc:
        raise DaemonApiError(400, "invalid_message", "message is not valid Unicode text") from exc
    if too_long:
        raise DaemonApiError(400, "invalid_message", f"message is over {MAX_TEXT_BYTES} bytes")
    return message


def answer_recall(state: DaemonState, hosted: DaemonWorkspace, data: Any) -> dict[str, Any]:
    """The recall answer for one request body (already parsed JSON)."""
    if not isinstance(data, dict):
        raise DaemonApiError(400, "invalid_message", "the request body must be a JSON object")
    message = _message(data)
    exclude = _exclusions(data.get("exclude"))
    probe_memory(hosted, "recall")
    recall = hosted.workspace.service.recall
    if recall is None:
        return {"attached": [], "linked": [], "block": ""}
    outcome = recall_for_message(recall, message, exclude, record=False)
    if outcome.attached:  # usage counts are written off the request path
        keys = [(note.scope, note.id) for note in outcome.attached]
        state.usage.add(recall, keys)
    for listener in state.use_listeners:
        listener(hosted)
    if outcome.attached:
        state.bus.publish(
            Event("recalled", {"count": len(outcome.attached)}, workspace=hosted.project_id)
        )
    return outcome.to_dict()


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise DaemonApiError(400, "invalid_message", "the client went away mid-request")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise body_too_large()
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _parse(raw: bytes) -> Any:
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DaemonApiError(400, "invalid_message", "the request body is not valid JSON") from exc


async def _send_json(send: Send, status: int, payload: object) -> None:
    # The same bytes as json.dumps(ensure_ascii=False, compact), a few times faster on a block.
    body = msgspec.json.encode(payload)
    headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode("latin-1"))]
    if status == 413:  # the rest of the body is not read: this connection ends
        headers.append((b"connection", b"close"))
    elif status == 405:
        headers.append((b"allow", b"POST"))
    start: Message = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})


class RecallFastPath:
    """Answers the two recall routes itself; passes every other request on."""

    def __init__(self, app: ASGIApp, state: DaemonState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        matched, project_id = (
            recall_target(scope["path"]) if scope["type"] == "http" else (False, None)
        )
        if not matched:
            await self.app(scope, receive, send)
            return
        try:
            if scope["method"] != "POST":
                raise DaemonApiError(
                    405, "method_not_allowed", "this route does not take that method"
                )
            registry = self.state.registry
            hosted = registry.default if project_id is None else registry.get(project_id)
            data = _parse(await _read_body(receive))
            answer = answer_recall(self.state, hosted, data)
        except DaemonApiError as exc:
            await _send_json(send, exc.status, {"error": exc.message, "code": exc.code})
            return
        except Exception as exc:  # the app's own handler would answer 500 the same way
            log.error("daemon request failed: %s", sanitise_details(f"{type(exc).__name__}: {exc}"))
            await _send_json(
                send, 500, {"error": "the daemon failed unexpectedly", "code": "internal"}
            )
            return
        await _send_json(send, 200, answer)


def _operation(name: str, parameters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "summary": "The <recalled-memory> block for one message",
        "operationId": name,
        "parameters": parameters,
        "requestBody": {"required": True, "content": {"application/json": {"schema": RECALL_BODY}}},
        "responses": {},  # declared with every other route's (oharness.daemon.routes.openapi)
    }


def add_recall_paths(schema: dict[str, Any]) -> None:
    """Describe the fast-path routes in the app's OpenAPI document."""
    paths = schema.setdefault("paths", {})
    paths[DEFAULT_PATH] = {"post": _operation("recall_default", [])}
    project = {"name": "project_id", "in": "path", "required": True, "schema": {"type": "string"}}
    paths["/workspaces/{project_id}/recall"] = {"post": _operation("recall_qualified", [project])}
