"""JSON Schemas of the request bodies, published in the OpenAPI document (``/openapi.json``) so
API fuzzers and client generators see the real shapes. Parsing itself is done by
:mod:`oharness.sync.protocol`; these describe the same rules."""

from __future__ import annotations

from typing import Any, Final

#: Protocol 1 serves the project scope only.
PROTOCOL_SCOPE_RULE: Final[dict[str, Any]] = {
    "if": {"properties": {"protocol": {"const": 1}}, "required": ["protocol"]},
    "then": {"properties": {"scope": {"properties": {"kind": {"const": "project"}}}}},
}
_SEGMENT: Final = "^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"

_SCOPE: Final[dict[str, Any]] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "kind": {"const": "project"},
                "projectId": {"type": "string", "pattern": _SEGMENT},
            },
            "required": ["kind", "projectId"],
        },
        {"type": "object", "properties": {"kind": {"const": "user"}}, "required": ["kind"]},
    ]
}

SNAPSHOT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "protocol": {"type": "integer", "minimum": 1},
        "scope": _SCOPE,
        "since": {"type": ["integer", "null"], "minimum": 0},
        "have": {"type": "array", "items": {"type": "string"}},
        "want": {"type": "array", "items": {"type": "string"}},
        "generation": {"type": ["string", "null"]},
        "sinceCommit": {"type": ["string", "null"]},
    },
    "required": ["protocol", "scope"],
    **PROTOCOL_SCOPE_RULE,
}

COMMIT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "protocol": {"type": "integer", "minimum": 1},
        "scope": _SCOPE,
        "baseVersion": {"type": ["integer", "null"], "minimum": 0},
        "atomic": {"type": "boolean"},
        "changes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"enum": ["put", "delete"]},
                    "id": {"type": "string", "pattern": _SEGMENT},
                    "baseRev": {"type": ["string", "null"]},
                    "content": {"type": "string"},
                },
                "required": ["op", "id", "baseRev"],
            },
        },
    },
    "required": ["protocol", "scope", "changes"],
    **PROTOCOL_SCOPE_RULE,
}

ERASE_SCHEMA: Final[dict[str, Any]] = {
    "oneOf": [
        {"type": "object", "properties": {"userId": {"type": "string"}}, "required": ["userId"]},
        {"type": "object", "properties": {"teamId": {"type": "string"}}, "required": ["teamId"]},
    ]
}


def request_body(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI ``requestBody`` entry for ``openapi_extra``."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}
