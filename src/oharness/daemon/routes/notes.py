"""Showing and managing memory over HTTP: notes, search, one note with its links, backups.

The same library calls as the CLI and the Memory page: ``MemoryService.listing`` and
``search`` with a :class:`~oharness.memory.note_filter.NoteFilter` (``oharness memory list`` /
``search --scope --type --tag``), ``MemoryService.read`` (``oharness memory show``),
:func:`~oharness.memory.backup_list.backup_listing` and
:func:`~oharness.memory.backup_list.restore_backup` (the page's Backups; the restore is
``MemoryService.restore``, which backs up the version it replaces). Conflicts are the sync
routes' (``/sync/conflicts``). Every route exists for the default workspace
(``/workspace/memory/...``) and any hosted one (``/workspaces/{projectId}/memory/...``).

Query parameters are read here, not by the framework, so that every refusal is the daemon's
``{"error", "code"}`` with a code naming the parameter.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from oharness.daemon.errors import DaemonApiError
from oharness.daemon.routes.memory import NOT_BLANK, state_of
from oharness.daemon.routes.validation import read_object
from oharness.daemon.workspaces import DaemonWorkspace
from oharness.errors import (
    ConflictError,
    LimitError,
    NoteFormatError,
    NotFoundError,
    OHarnessError,
    UnavailableError,
    ValidationError,
)
from oharness.memory.backup_list import BackupEntry, backup_listing, restore_backup
from oharness.memory.memory_service import MODEL_HINTS, PERSON_HINTS, MemoryService
from oharness.memory.note_filter import MAX_TAG_CHARS, UNTYPED, NoteFilter
from oharness.notes.ids import ID_PATTERN
from oharness.types import NOTE_TYPES, SCOPES, Scope

#: The most notes one listing page holds, the most search results, the most backups listed.
MAX_LIST: Final = 500
MAX_SEARCH: Final = 200
MAX_BACKUPS: Final = 500
#: The longest search query taken (the page cuts its own at 500).
MAX_QUERY_CHARS: Final = 1000
NOTE_ID_PATTERN: Final = f"^{ID_PATTERN.pattern}$"
_INTEGER: Final = re.compile(r"-?[0-9]+")


_STRING: Final = {"type": "string"}


def _query(name: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema}


def _limit(default: int, most: int) -> dict[str, Any]:
    return _query("limit", {"type": "integer", "minimum": 1, "maximum": most, "default": default})


_FILTERS: Final = [
    _query("scope", {"enum": list(SCOPES)}),
    _query("type", {"enum": [*NOTE_TYPES, UNTYPED]}),
    _query("tag", {"type": "string", "maxLength": MAX_TAG_CHARS}),
]
_NOTE_ID: Final = {"name": "note_id", "in": "path", "required": True}
PARAMETERS: Final[dict[str, list[dict[str, Any]]]] = {
    "notes": [
        *_FILTERS,
        _query("offset", {"type": "integer", "minimum": 0, "default": 0}),
        _limit(50, MAX_LIST),
    ],
    "search": [
        _query(
            "q",
            {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "pattern": NOT_BLANK},
            required=True,
        ),
        *_FILTERS,
        _limit(10, MAX_SEARCH),
    ],
    "note": [
        {**_NOTE_ID, "schema": {"type": "string", "pattern": NOTE_ID_PATTERN}},
        _query("scope", {"enum": list(SCOPES)}),
    ],
    "backups": [_limit(50, MAX_BACKUPS)],
    "restore": [{"name": "backup_id", "in": "path", "required": True, "schema": _STRING}],
}
RESTORE_BODY: Final = {
    "type": "object",
    "properties": {"confirmed": {"type": "boolean"}},
}


#: The library words its hints for a model (the daemon's memory serves tasks too); an API
#: caller is told what to call instead.
_API_HINTS: Final = (
    (MODEL_HINTS.list_notes, "GET /workspace/memory/notes lists the ids"),
    (MODEL_HINTS.unreadable, PERSON_HINTS.unreadable),
)


def _refusal(exc: OHarnessError, not_found: str) -> DaemonApiError:
    """A library error as the daemon's refusal: the status its kind calls for, a stable code."""
    for model_hint, api_hint in _API_HINTS:
        exc.message = exc.message.replace(model_hint, api_hint)
    if isinstance(exc, NotFoundError):
        return DaemonApiError(404, not_found, exc.message)
    if isinstance(exc, ValidationError):
        return DaemonApiError(400, f"invalid_{exc.details.get('field') or 'request'}", exc.message)
    if isinstance(exc, ConflictError):
        return DaemonApiError(409, str(exc.details.get("reason") or "note_ambiguous"), exc.message)
    if isinstance(exc, NoteFormatError):
        return DaemonApiError(409, "note_unreadable", exc.message)
    if isinstance(exc, UnavailableError | LimitError):
        return DaemonApiError(409, exc.code, exc.message)
    return DaemonApiError(500, "memory_failed", f"{exc.message}; nothing was changed")


def _text_param(request: Request, name: str, most: int, code: str) -> str | None:
    value = request.query_params.get(name)
    if value is not None and len(value) > most:
        raise DaemonApiError(400, code, f"{name} is {len(value)} characters; at most {most}")
    return value


def _int_param(request: Request, name: str, default: int, least: int, most: int | None) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    value = int(raw) if _INTEGER.fullmatch(raw) else least - 1
    if value < least or (most is not None and value > most):
        bounds = f"from {least}" + (f" to {most}" if most is not None else " up")
        raise DaemonApiError(400, f"invalid_{name}", f"{name} must be a whole number {bounds}")
    return value


def _filters(request: Request) -> NoteFilter:
    params = request.query_params
    for name in ("scope", "type"):
        if params.get(name) == "":  # left out, not empty: an empty value is a mistake
            raise DaemonApiError(
                400, f"invalid_{name}", f"{name} is empty: give a value or leave it out"
            )
    try:
        return NoteFilter.of(params.get("scope"), params.get("type"), params.get("tag"))
    except ValidationError as exc:
        raise _refusal(exc, "not_found") from exc


def _scope(request: Request) -> Scope | None:
    value = request.query_params.get("scope")
    if value is None:
        return None
    if value not in SCOPES:
        raise DaemonApiError(
            400, "invalid_scope", "scope must be 'project' or 'user' (or left out)"
        )
    return "user" if value == "user" else "project"


async def _run(
    request: Request,
    project_id: str | None,
    work: Callable[[MemoryService], dict[str, Any]],
    not_found: str = "not_found",
) -> Response:
    """``work`` over the workspace's memory in a worker thread (it reads files; at thousands of
    notes a listing must not hold up the event streams), its refusals as the daemon's."""
    hosted = state_of(request).workspace_for(project_id)
    try:
        found = await asyncio.to_thread(work, hosted.workspace.service)
    except OHarnessError as exc:
        raise _refusal(exc, not_found) from exc
    return JSONResponse(found, headers={"Cache-Control": "no-store"})


async def list_notes(request: Request, project_id: str | None) -> Response:
    filters = _filters(request)
    offset = _int_param(request, "offset", 0, 0, None)
    limit = _int_param(request, "limit", 50, 1, MAX_LIST)
    return await _run(
        request, project_id, lambda service: service.listing(offset, limit, filters).to_dict()
    )


async def search_notes(request: Request, project_id: str | None) -> Response:
    query = _text_param(request, "q", MAX_QUERY_CHARS, "invalid_query")
    if query is None or not query.strip():
        raise DaemonApiError(400, "invalid_query", "q is required: the words to search for")
    filters = _filters(request)
    limit = _int_param(request, "limit", 10, 1, MAX_SEARCH)

    def search(service: MemoryService) -> dict[str, Any]:
        hits = service.search(query, limit, filters)
        return {"query": query, "results": [hit.to_dict() for hit in hits]}

    return await _run(request, project_id, search)


async def show_note(request: Request, project_id: str | None, note_id: str) -> Response:
    scope = _scope(request)
    if not ID_PATTERN.fullmatch(note_id):
        raise DaemonApiError(
            400,
            "invalid_id",
            f"{note_id[:200]!r} is not a note id (letters, digits, '-' and '_'; at most 128); "
            "give the scope as ?scope=project or ?scope=user",
        )
    return await _run(
        request,
        project_id,
        lambda service: service.read(note_id, scope).to_dict(),
        "note_not_found",
    )


def backup_json(entry: BackupEntry) -> dict[str, Any]:
    """One listed backup: the record (as ``oharness memory backups --json``), the note's
    summary, the scope a restore puts it in, and how it compares with the note there now."""
    note = entry.note
    return {
        **entry.record.to_dict(),
        "summary": note.summary if note is not None else None,
        "restoreScope": entry.scope,
        "restorable": entry.readable,
        "current": entry.current,
    }


async def list_backups(request: Request, project_id: str | None) -> Response:
    limit = _int_param(request, "limit", 50, 1, MAX_BACKUPS)
    return await _run(
        request,
        project_id,
        lambda service: {"backups": [backup_json(e) for e in backup_listing(service, limit)]},
    )


async def restore(request: Request, project_id: str | None, backup_id: str) -> Response:
    data = await read_object(request, "invalid_restore")
    confirmed = data.get("confirmed", False)
    if not isinstance(confirmed, bool):
        raise DaemonApiError(400, "invalid_restore", "confirmed must be true or false")
    state = state_of(request)
    hosted: DaemonWorkspace = state.workspace_for(project_id)
    try:
        result = await asyncio.to_thread(
            restore_backup, hosted.workspace.service, backup_id, confirmed=confirmed
        )
    except ConflictError as exc:
        if exc.details.get("reason") == "replaces_newer":
            raise DaemonApiError(
                409,
                "replaces_newer",
                f"{exc.message.removesuffix(': confirm to restore')}: send "
                '{"confirmed": true} to restore it anyway',
            ) from exc
        raise _refusal(exc, "backup_not_found") from exc
    except ValidationError as exc:  # taken from another project's folder: restore it there
        raise DaemonApiError(409, "backup_elsewhere", exc.message) from exc
    except OHarnessError as exc:
        raise _refusal(exc, "backup_not_found") from exc
    if result.changed:
        state.changed(hosted, result.scope, "api")
    return JSONResponse(result.to_dict())


def notes_router() -> APIRouter:
    router = APIRouter()
    for prefix in ("/workspace", "/workspaces/{project_id}"):
        _add_routes(router, prefix)
    return router


_PROJECT_ID: Final = {"name": "project_id", "in": "path", "required": True, "schema": _STRING}
#: (path under ``.../memory``, method, name, summary): the endpoints read their path
#: parameters themselves, so the document declares each once, with its pattern.
ROUTES: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("/notes", "GET", "notes", "List notes (filters: scope, type, tag), newest first"),
    ("/search", "GET", "search", "Search notes, best first"),
    ("/notes/{note_id}", "GET", "note", "One note with its links"),
    ("/backups", "GET", "backups", "The newest backups of this workspace's notes"),
    ("/backups/{backup_id}/restore", "POST", "restore", "Restore a backup"),
)


def _endpoint(name: str, qualified: bool) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        project_id = request.path_params["project_id"] if qualified else None
        params = request.path_params
        if name == "notes":
            return await list_notes(request, project_id)
        if name == "search":
            return await search_notes(request, project_id)
        if name == "note":
            return await show_note(request, project_id, params["note_id"])
        if name == "backups":
            return await list_backups(request, project_id)
        return await restore(request, project_id, params["backup_id"])

    return endpoint


def _add_routes(router: APIRouter, prefix: str) -> None:
    qualified = "{" in prefix
    for path, method, name, summary in ROUTES:
        extra: dict[str, Any] = {
            "parameters": [*([_PROJECT_ID] if qualified else []), *PARAMETERS[name]]
        }
        if name == "restore":
            extra["requestBody"] = {"content": {"application/json": {"schema": RESTORE_BODY}}}
        router.add_api_route(
            f"{prefix}/memory{path}",
            _endpoint(name, qualified),
            methods=[method],
            openapi_extra=extra,
            name=name + ("_qualified" if qualified else ""),
            summary=summary,
        )
