"""The HTTP routes: identity, snapshot, commit (spec 06), admin erase (06.7), health (08).

Handlers are ``async``; storage work runs in the thread pool. Request bodies are parsed by
:mod:`oharness.sync.protocol` (not by FastAPI models) so every malformed shape gets the
protocol's own ``invalid_request`` answer.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from oharness.errors import ValidationError
from oharness.server.context import ServerContext, authorize, in_thread
from oharness.server.logs import log_event
from oharness.server.planner import CommitLimits
from oharness.server.responses import ApiError, json_response, read_json_body
from oharness.server.schema import COMMIT_SCHEMA, ERASE_SCHEMA, SNAPSHOT_SCHEMA, request_body
from oharness.sync.protocol import (
    CommitRequest,
    Identity,
    SnapshotRequest,
    TeamEntitlement,
    is_reserved_subject,
    parse_commit_request,
    parse_snapshot_request,
    read_protocol,
    scope_prefix,
    user_key_segment,
)

_BEARER: list[dict[str, list[str]]] = [{"bearer": []}]


def _context(request: Request) -> ServerContext:
    context: ServerContext = request.app.state.context
    return context


async def _protocol_body(context: ServerContext, request: Request) -> object:
    body = await read_json_body(request, context.settings.max_request_bytes)
    try:
        protocol = read_protocol(body)
    except ValidationError as exc:
        raise ApiError("invalid_request", exc.message) from exc
    served = context.settings.protocols
    if protocol not in served:
        raise ApiError(
            "protocol_unsupported",
            f"this server speaks sync protocol {', '.join(map(str, served))}, not {protocol}"
            + (": upgrade the server" if protocol > max(served) else ": upgrade the client"),
            protocols=list(served),
        )
    return body


def _check_scope_protocol(protocol: int, kind: str) -> None:
    if protocol < 2 and kind != "project":
        raise ApiError("invalid_request", "protocol 1 syncs project notes only")


def memory_router() -> APIRouter:
    """``/v1/memory/*``."""
    router = APIRouter(prefix="/v1/memory")

    @router.get("/identity", openapi_extra={"security": _BEARER})
    async def identity(request: Request) -> Response:
        context = _context(request)
        caller = await authorize(context, request)
        teams = tuple(
            TeamEntitlement(team.id, team.plan)
            for team in caller.principal.teams
            if user_key_segment(team.id) not in caller.erased_teams
        )
        body = Identity(
            user_id=caller.principal.user_id,
            plan=caller.plan,
            teams=teams,
            protocols=context.settings.protocols,
            quotas=context.settings.quotas,
            plan_limits=context.settings.free_plan_limits if caller.plan == "free" else None,
        )
        return json_response(body.to_json())

    @router.post("/snapshot", openapi_extra={"security": _BEARER, **request_body(SNAPSHOT_SCHEMA)})
    async def snapshot(request: Request) -> Response:
        context = _context(request)
        caller = await authorize(context, request, defer_erase_check=True)
        body = await _protocol_body(context, request)
        try:
            parsed: SnapshotRequest = parse_snapshot_request(body)
        except ValidationError as exc:
            raise ApiError("invalid_request", exc.message) from exc
        _check_scope_protocol(parsed.protocol, parsed.scope.kind)
        prefix = scope_prefix(caller.principal.segment, parsed.scope)
        segment = caller.principal.segment
        result = await in_thread(context.scopes.snapshot, prefix, parsed, caller.plan, segment)
        # Up to maxResponseBytes of JSON: encode it off the event loop.
        return await in_thread(json_response, result.to_json(parsed.protocol))

    @router.post("/commit", openapi_extra={"security": _BEARER, **request_body(COMMIT_SCHEMA)})
    async def commit(request: Request) -> Response:
        context = _context(request)
        caller = await authorize(context, request)
        body = await _protocol_body(context, request)
        try:
            parsed: CommitRequest = parse_commit_request(body)
        except ValidationError as exc:
            raise ApiError("invalid_request", exc.message) from exc
        _check_scope_protocol(parsed.protocol, parsed.scope.kind)
        quotas = context.settings.quotas
        if len(parsed.changes) > quotas.max_changes_per_commit:
            raise ApiError(
                "too_large",
                f"{len(parsed.changes)} changes in one commit, at most "
                f"{quotas.max_changes_per_commit}: split it",
            )
        prefix = scope_prefix(caller.principal.segment, parsed.scope)
        limits = CommitLimits(
            quotas, context.settings.free_plan_limits if caller.plan == "free" else None
        )
        async with context.locks.hold(prefix):
            result = await in_thread(context.scopes.commit, prefix, parsed, limits, caller.plan)
        return json_response(result.to_json())

    return router


def _admin_target(body: object) -> tuple[str, str]:
    if isinstance(body, dict):
        targets = [(key, body[key]) for key in ("userId", "teamId") if key in body]
        if len(targets) == 1 and isinstance(targets[0][1], str) and targets[0][1]:
            if is_reserved_subject(targets[0][1]):
                raise ApiError(
                    "invalid_request", f"{targets[0][1]!r} has the reserved shape u-<32 hex>"
                )
            return targets[0][0], targets[0][1]
    raise ApiError("invalid_request", 'send {"userId": "…"} or {"teamId": "…"}')


def admin_router(admin_key: str) -> APIRouter:
    """``/v1/admin/erase`` (only mounted when an admin key is configured)."""
    router = APIRouter(prefix="/v1/admin")
    expected = admin_key.encode("utf-8")

    @router.post("/erase", openapi_extra={"security": _BEARER, **request_body(ERASE_SCHEMA)})
    async def erase(request: Request) -> Response:
        context = _context(request)
        scheme, _, given = (request.headers.get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode("utf-8"), expected
        ):
            raise ApiError("unauthorized", "the admin key is missing or wrong")
        kind, target = _admin_target(await read_json_body(request, 64 * 1024))
        now = context.clock()
        concurrency = context.settings.io_concurrency
        if kind == "userId":
            deleted = await in_thread(_erase_user, context, target, now, concurrency)
        else:
            deleted = await in_thread(_erase_team, context, target, now, concurrency)
        segment = user_key_segment(target)
        log_event(logging.INFO, "erase", kind=kind, target=segment, deleted=deleted)
        result: dict[str, Any] = {
            "erased": {kind: target},
            "deleted": deleted,
            "quotas": context.settings.quotas.to_json(),
            "plan": "free",
        }
        return json_response(result)

    return router


def _erase_user(context: ServerContext, user_id: str, now: int, concurrency: int) -> int:
    return context.scopes.erase_user(user_id, now=now, concurrency=concurrency)


def _erase_team(context: ServerContext, team_id: str, now: int, concurrency: int) -> int:
    return context.scopes.erase_team(team_id, now=now, concurrency=concurrency)


def health_router() -> APIRouter:
    """``/healthz``: 200 when storage answers, else 503."""
    router = APIRouter()

    @router.get("/healthz")
    async def healthz(request: Request) -> Response:
        context = _context(request)
        await in_thread(context.store.ping)
        return json_response(
            {"status": "ok", "quotas": context.settings.quotas.to_json(), "plan": "free"}
        )

    return router
