"""The schemas of the notes routes' answers (:mod:`.notes`), for the OpenAPI document.

Each mirrors a library result's ``to_dict``: ``ListingItem``, ``SearchHit``, ``NoteView`` with
its ``LinkView`` links, ``BackupRecord`` with the listing's comparison. Keys that only appear
sometimes (``conflict`` on a note a sync conflict waits for, ``extra``) are optional.
"""

from __future__ import annotations

from typing import Any, Final

_STRING: Final = {"type": "string"}
_NULLABLE_STRING: Final = {"type": ["string", "null"]}
_INTEGER: Final = {"type": "integer"}
_SCOPE: Final = {"enum": ["project", "user"]}
_NOTE_TYPE: Final = {"enum": ["user", "feedback", "project", "reference", None]}
_REF: Final = "#/components/schemas/"


def _object(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
    }


_CONFLICT: Final = {"conflict": _STRING}
NOTE_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "NoteItem": _object(
        {
            "id": _STRING,
            "scope": _SCOPE,
            "type": _NOTE_TYPE,
            "summary": _STRING,
            "updatedAt": _INTEGER,
        },
        _CONFLICT,
    ),
    "SearchResult": _object(
        {
            "id": _STRING,
            "scope": _SCOPE,
            "summary": _STRING,
            "score": {"type": "number"},
            "snippet": _STRING,
        },
        _CONFLICT,
    ),
    "Link": _object(
        {
            "id": _STRING,
            "scope": {"enum": ["project", "user", None]},
            "summary": _NULLABLE_STRING,
            "missing": {"type": "boolean"},
        }
    ),
    "Note": _object(
        {
            "id": _STRING,
            "scope": _SCOPE,
            "summary": _STRING,
            "type": _NOTE_TYPE,
            "tags": {"type": "array", "items": _STRING},
            "createdAt": _INTEGER,
            "updatedAt": _INTEGER,
            "body": _STRING,
            "path": _STRING,
            "hash": _STRING,
            "links": {"type": "array", "items": {"$ref": _REF + "Link"}},
            "incoming": {"type": "array", "items": {"$ref": _REF + "Link"}},
        },
        {**_CONFLICT, "conflictHelp": _STRING, "extra": {"type": "object"}},
    ),
    "Backup": _object(
        {
            "backupId": _STRING,
            "id": _NULLABLE_STRING,
            "reason": _STRING,
            "createdAt": _INTEGER,
            "scopeDir": _NULLABLE_STRING,
            "scopeKey": _NULLABLE_STRING,
            "hash": _NULLABLE_STRING,
            "path": _STRING,
            "summary": _NULLABLE_STRING,
            "restoreScope": {"enum": ["project", "user", None]},
            "restorable": {"type": "boolean"},
            "current": {"enum": ["absent", "same", "older", "newer", None]},
        }
    ),
}
