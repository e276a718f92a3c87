"""The OpenAPI document the server publishes (``/openapi.json``), generated from the routes'
table and the protocol's declarations: each route's request body and answer are the JSON
Schemas msgspec derives from the message structs, every error response each route can give
uses the error body's schema, and the Bearer scheme is declared."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from oharness import __version__
from oharness.server.routes import Operation
from oharness.sync.protocol import ERROR_STATUS, ErrorResponse

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
ERROR_FAMILIES: Final[dict[str, list[int]]] = {
    "memory": sorted({*ERROR_STATUS.values(), 405}),
    "admin": [400, 401, 405, 413, 503],
    "health": [405, 503],
}
_REF: Final = "#/components/schemas/{name}"


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _operation(op: Operation, schemas: dict[object, dict[str, Any]]) -> dict[str, Any]:
    error = _json(schemas[ErrorResponse])
    responses: dict[str, Any] = {"200": {"description": "OK", "content": _json(schemas[op.answer])}}
    for status in ERROR_FAMILIES[op.errors]:
        responses[str(status)] = {"description": _DESCRIPTIONS[status], "content": error}
    entry: dict[str, Any] = {"operationId": op.endpoint.__name__, "responses": responses}
    if op.body is not None:
        entry["requestBody"] = {"required": True, "content": _json(schemas[op.body])}
    if op.bearer:
        entry["security"] = [{"bearer": []}]
    return entry


def openapi_document(served: tuple[Operation, ...]) -> dict[str, Any]:
    """The whole document for the routes ``served``."""
    kinds: list[object] = [ErrorResponse]
    for op in served:
        kinds += [op.answer] if op.body is None else [op.answer, op.body]
    kinds = list(dict.fromkeys(kinds))
    found, components = msgspec.json.schema_components(kinds, ref_template=_REF)
    schemas = dict(zip(kinds, found, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for op in served:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": "oharness sync server", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
        },
    }
