"""The OpenAPI document the server publishes (``/openapi.json``): the Bearer scheme, every
error response each route can give (with the error body's schema), and the request rules the
JSON Schemas can state (see :mod:`oharness.server.schema`)."""

from __future__ import annotations

from typing import Any, Final

from oharness.sync.protocol import ERROR_STATUS

_QUOTAS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        name: {"type": "integer"}
        for name in (
            "maxNotes",
            "maxChangesPerCommit",
            "maxBodyBytes",
            "maxResponseBytes",
            "tombstoneDays",
            "maxRequestBytes",
        )
    },
    "required": [
        "maxNotes",
        "maxChangesPerCommit",
        "maxBodyBytes",
        "maxResponseBytes",
        "tombstoneDays",
    ],
}
ERROR_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "error": {"type": "string"},
        "message": {"type": "string"},
        "quotas": _QUOTAS,
        "plan": {"enum": ["free", "paid"]},
        "conflicts": {"type": "array"},
        "protocols": {"type": "array", "items": {"type": "integer"}},
        "version": {"type": "integer"},
    },
    "required": ["error", "message", "quotas", "plan"],
}
_DESCRIPTIONS: Final = {
    400: "invalid_request: malformed JSON or request shape, bad scope or project id",
    401: "unauthorized: missing, malformed, badly signed or expired token",
    403: "account_erased, or plan_limit (atomic commits)",
    404: "not_found",
    405: "method_not_allowed (the Allow header lists the methods)",
    409: "conflict: an atomic commit with a failing change",
    412: "manifest_changed: an atomic commit with a stale baseVersion",
    413: "too_large: too many changes, or a request over the size limit",
    422: "quota_exceeded (atomic commits)",
    426: "protocol_unsupported: the protocols served are listed",
    429: "rate_limited: retry after Retry-After seconds",
    503: "unavailable: storage failure or contention; retry after Retry-After seconds",
}
#: Error statuses per route family.
_MEMORY_STATUSES: Final = sorted({*ERROR_STATUS.values(), 405})
_ADMIN_STATUSES: Final = [400, 401, 405, 413, 503]


def _error_responses(statuses: list[int]) -> dict[str, Any]:
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    return {
        str(status): {"description": _DESCRIPTIONS[status], "content": content}
        for status in statuses
    }


def complete_openapi(schema: dict[str, Any]) -> dict[str, Any]:
    """Add the security scheme, the error schema and each route's error responses."""
    components = schema.setdefault("components", {})
    components["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    }
    components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, operations in schema.get("paths", {}).items():
        if path.startswith("/v1/memory/"):
            statuses = _MEMORY_STATUSES
        elif path.startswith("/v1/admin/"):
            statuses = _ADMIN_STATUSES
        else:
            statuses = [405]
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)  # FastAPI's validation default: never sent here
            responses.update(_error_responses(statuses))
    return schema
