"""The daemon's OpenAPI document (``GET /openapi.json``): FastAPI's paths and request bodies,
with every operation's answers declared from one table here.

Every status a route can answer is listed with its body's schema: the success body, and the
error body ``{"error", "code"}`` for each refusal. Refusals every route shares come from the
guards in front of all of them: 401 ``token_required``, 403 ``host_not_allowed`` /
``origin_not_allowed``, 413 ``body_too_large`` and 429 ``too_many_attempts``. The table is
checked against the live daemon by schemathesis (``tests/integration/daemon``): no answer may
carry a status or a body the document does not declare.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from oharness.daemon.routes.openapi_notes import NOTE_SCHEMAS
from oharness.daemon.tasks.lane import TASK_KINDS

_REF: Final = "#/components/schemas/"
_STRING: Final = {"type": "string"}
_OBJECT: Final = {"type": "object"}
_NULLABLE_OBJECT: Final = {"type": ["object", "null"]}
SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "Error": {
        "type": "object",
        "properties": {"error": _STRING, "code": _STRING},
        "required": ["error", "code"],
    },
    "TaskSnapshot": {
        "type": "object",
        "properties": {
            "taskId": _STRING,
            "status": {"enum": ["queued", "running", "completed", "failed"]},
            "contextMode": {"enum": ["workspace", "clean"]},
            "scope": {"enum": ["project", "user"]},
            "createdAt": _STRING,
            "updatedAt": _STRING,
            "result": _NULLABLE_OBJECT,
            "error": _NULLABLE_OBJECT,
        },
        "required": ["taskId", "status", "createdAt", "updatedAt", "result", "error"],
    },
    "Workspace": {
        "type": "object",
        "properties": {
            "projectId": _STRING,
            "root": _STRING,
            "default": {"type": "boolean"},
            "pendingTasks": {"type": "integer", "minimum": 0},
            "draining": {"type": "boolean"},
        },
        "required": ["projectId", "root", "default", "pendingTasks", "draining"],
    },
    **NOTE_SCHEMAS,
}
_DESCRIPTIONS: Final = {
    400: "the request is malformed: the code names the field",
    401: "token_required: no credential, or a wrong one",
    403: "host_not_allowed or origin_not_allowed",
    404: "workspace_not_found, note_not_found, backup_not_found, or a task or route that "
    "does not exist",
    409: "the workspace or sync state refuses it (the code says which)",
    413: "body_too_large: the request body is over 1 MiB",
    429: "too_many_attempts (wrong credentials: Retry-After), or remember_queue_full",
    500: "remember_failed, forget_failed, dream_failed, capture_failed, recall_failed or "
    "memory_failed: memory is unreadable",
    503: "workspace_draining: the workspace is being removed",
}
#: What the guards in front of every route may answer.
_GUARDS: Final = (401, 403, 413, 429)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF + name}


def _obj(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


@dataclass(frozen=True)
class Answers:
    """What one family of operations answers: success statuses with a body schema, refusals."""

    success: tuple[int, ...]
    body: dict[str, Any]
    errors: tuple[int, ...] = ()
    media: str = "application/json"


_KINDS: Final = "|".join(TASK_KINDS)
#: The default workspace's prefix for tasks and recall, or a hosted one's.
_TASKS: Final = r"(/workspace|/workspaces/\{project_id\})"
#: The default workspace's sync routes have no prefix.
_SYNC: Final = r"(/workspaces/\{project_id\})?/sync"
_ARRAY: Final = {"type": "array"}
_RECALL: Final = _obj({"attached": _ARRAY, "linked": _ARRAY, "block": _STRING})
_WORKSPACES: Final = _obj({"workspaces": {"type": "array", "items": _ref("Workspace")}})
_CONFLICTS: Final = _obj({"conflicts": {"type": "array", "items": _OBJECT}})
_NULLABLE_STRING: Final = {"type": ["string", "null"]}
_SCOPE: Final = {"enum": ["project", "user"]}
_NOTES: Final = _obj(
    {
        "notes": {"type": "array", "items": _ref("NoteItem")},
        "total": {"type": "integer", "minimum": 0},
        "offset": {"type": "integer", "minimum": 0},
        "nextOffset": {"type": ["integer", "null"]},
    }
)
_SEARCH: Final = _obj(
    {"query": _STRING, "results": {"type": "array", "items": _ref("SearchResult")}}
)
_BACKUPS: Final = _obj({"backups": {"type": "array", "items": _ref("Backup")}})
_RESTORED: Final = _obj(
    {
        "id": _STRING,
        "scope": _SCOPE,
        "path": _STRING,
        "backupId": _STRING,
        "replacedBackupId": _NULLABLE_STRING,
        "changed": {"type": "boolean"},
    }
)
#: (method, path pattern) → answers, first match wins.
TABLE: Final[tuple[tuple[str, str, Answers], ...]] = (
    (
        "post",
        rf"{_TASKS}/memory/({_KINDS})",
        Answers((202,), _ref("TaskSnapshot"), (400, 404, 409, 500, 503)),
    ),
    (
        "get",
        rf"{_TASKS}/memory/({_KINDS})/\{{task_id\}}",
        Answers((200,), _ref("TaskSnapshot"), (400, 404)),
    ),
    ("post", rf"{_TASKS}/recall", Answers((200,), _RECALL, (400, 404, 409, 500))),
    ("get", rf"{_TASKS}/memory/notes", Answers((200,), _NOTES, (400, 404, 409, 500))),
    ("get", rf"{_TASKS}/memory/search", Answers((200,), _SEARCH, (400, 404, 409, 500))),
    (
        "get",
        rf"{_TASKS}/memory/notes/\{{note_id\}}",
        Answers((200,), _ref("Note"), (400, 404, 409, 500)),
    ),
    ("get", rf"{_TASKS}/memory/backups", Answers((200,), _BACKUPS, (400, 404, 409, 500))),
    (
        "post",
        rf"{_TASKS}/memory/backups/\{{backup_id\}}/restore",
        Answers((200,), _RESTORED, (400, 404, 409, 500)),
    ),
    ("get", r"/capabilities", Answers((200,), _obj({"capabilities": _OBJECT}))),
    ("get", r"/events", Answers((200,), _STRING, (400, 404), media="text/event-stream")),
    ("get", r"/workspaces", Answers((200,), _WORKSPACES)),
    ("post", r"/workspaces", Answers((200, 201), _ref("Workspace"), (400, 409))),
    (
        "delete",
        r"/workspaces/\{project_id\}",
        Answers((200,), _obj({"removed": _STRING}), (404, 409)),
    ),
    ("get", r"/auth/csrf", Answers((200,), _obj({"csrfToken": _STRING}))),
    ("post", r"/sync/(on|off)", Answers((200,), _obj({"enabled": {"type": "boolean"}}), (409,))),
    ("get", rf"{_SYNC}/status", Answers((200,), _OBJECT, (404, 409))),
    ("post", rf"{_SYNC}/now", Answers((200,), _OBJECT, (404, 409))),
    ("get", rf"{_SYNC}/conflicts", Answers((200,), _CONFLICTS, (404, 409))),
    (
        "post",
        rf"{_SYNC}/conflicts/\{{note_id\}}/resolve",
        Answers((200,), _OBJECT, (400, 404, 409)),
    ),
)


def answers_for(method: str, path: str) -> Answers:
    """The table's answers for one operation (a route missing from it is a bug)."""
    for table_method, pattern, answers in TABLE:
        if table_method == method and re.fullmatch(pattern, path):
            return answers
    raise LookupError(f"{method.upper()} {path} has no answers in oharness.daemon.routes.openapi")


def responses(answers: Answers) -> dict[str, Any]:
    """The ``responses`` object of an operation."""
    found: dict[str, Any] = {}
    for status in answers.success:
        content = {answers.media: {"schema": answers.body}}
        found[str(status)] = {"description": "OK", "content": content}
    error = {"application/json": {"schema": _ref("Error")}}
    for status in sorted({*answers.errors, *_GUARDS}):
        found[str(status)] = {"description": _DESCRIPTIONS[status], "content": error}
    return found


def finish_document(schema: dict[str, Any]) -> dict[str, Any]:
    """Declare every operation's answers and the bearer scheme on FastAPI's document."""
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            operation["responses"] = responses(answers_for(method, path))
    components = schema.setdefault("components", {})
    components["schemas"] = dict(SCHEMAS)  # FastAPI's validation-error models are never sent
    components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    schema["security"] = [{"bearer": []}]
    return schema
