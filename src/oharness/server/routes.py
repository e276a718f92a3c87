"""The HTTP routes: identity, snapshot, commit (spec 06), the key envelope of end-to-end
encryption (:mod:`oharness.server.keys`), admin erase (06.7), health (08).

Handlers are ``async`` Starlette endpoints; storage work runs in the thread pool. A request body
is read with a size cap, then parsed through its declaration in :mod:`oharness.sync.protocol`
(``protocol`` first, so an unserved protocol is answered 426 whatever else the body holds);
every malformed shape gets the protocol's own ``invalid_request`` answer. The OpenAPI document
(:mod:`oharness.server.openapi`) is generated from :data:`OPERATIONS`, the same table.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from oharness.errors import ValidationError
from oharness.server.context import ServerContext, authorize, in_thread
from oharness.server.erase import delete_prefixes
from oharness.server.keys import (
    account_scopes,
    check_scope_allowed,
    keys_key,
    read_keys,
    write_keys,
)
from oharness.server.logs import log_event
from oharness.server.planner import CommitLimits
from oharness.server.responses import SyncApiError, json_response, read_json_body
from oharness.sync.protocol import (
    CommitRequestBody,
    CommitResponse,
    EraseRequest,
    EraseResponse,
    HealthResponse,
    Identity,
    KeysRequestBody,
    KeysResponse,
    ScopeEraseRequestBody,
    ScopeEraseResponse,
    ScopesResponse,
    SnapshotRequestBody,
    SnapshotResponse,
    SyncScope,
    TeamEntitlement,
    parse_commit_request,
    parse_erase_request,
    parse_keys_request,
    parse_scope_erase_request,
    parse_snapshot_request,
    protocol_scope_problem,
    read_protocol,
    scope_prefix,
    user_key_segment,
)

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Operation:
    """One route: its declared request body and answer, and the errors it can give."""

    path: str
    method: str
    endpoint: Endpoint
    answer: object
    body: object | None = None
    errors: str = "memory"  # which error family (see oharness.server.openapi)
    bearer: bool = True


def _context(request: Request) -> ServerContext:
    context: ServerContext = request.app.state.context
    return context


def _invalid(exc: ValidationError) -> SyncApiError:
    return SyncApiError("invalid_request", exc.message)


async def _protocol_body(context: ServerContext, request: Request) -> object:
    body = await read_json_body(request, context.settings.max_request_bytes)
    try:
        protocol = read_protocol(body)
    except ValidationError as exc:
        raise _invalid(exc) from exc
    served = context.settings.protocols
    if protocol not in served:
        raise SyncApiError(
            "protocol_unsupported",
            f"this server speaks sync protocol {', '.join(map(str, served))}, not {protocol}"
            + (": upgrade the server" if protocol > max(served) else ": upgrade the client"),
            protocols=list(served),
        )
    return body


class _Scoped(Protocol):
    """A request body naming a scope (snapshot, commit, scope erase)."""

    @property
    def protocol(self) -> int: ...

    @property
    def scope(self) -> SyncScope: ...


_ScopedBody = TypeVar("_ScopedBody", bound=_Scoped)


async def _scoped_body(
    context: ServerContext, request: Request, parse: Callable[[object], _ScopedBody]
) -> _ScopedBody:
    """A request body naming a scope, parsed, its scope checked against its protocol."""
    body = await _protocol_body(context, request)
    try:
        parsed = parse(body)
    except ValidationError as exc:
        raise _invalid(exc) from exc
    problem = protocol_scope_problem(parsed.protocol, parsed.scope)
    if problem is not None:
        raise SyncApiError("invalid_request", problem)
    return parsed


async def identity(request: Request) -> Response:
    """``GET /v1/memory/identity``."""
    context = _context(request)
    caller = await authorize(context, request)
    teams = tuple(
        TeamEntitlement(team.id, team.plan)
        for team in caller.principal.teams
        if user_key_segment(team.id) not in caller.erased_teams
    )
    stored = await in_thread(read_keys, context.store, caller.principal.segment)
    body = Identity(
        user_id=caller.principal.user_id,
        plan=caller.plan,
        teams=teams,
        protocols=context.settings.protocols,
        quotas=context.settings.quotas,
        plan_limits=context.settings.free_plan_limits if caller.plan == "free" else None,
        encrypted=stored.envelope is not None,
    )
    return json_response(body.encode())


async def get_keys(request: Request) -> Response:
    """``GET /v1/memory/keys``: the account's key envelope (end-to-end encryption)."""
    context = _context(request)
    caller = await authorize(context, request)
    stored = await in_thread(read_keys, context.store, caller.principal.segment)
    answer = KeysResponse(stored.envelope, stored.version, context.settings.quotas, caller.plan)
    return json_response(answer.encode())


async def put_keys(request: Request) -> Response:
    """``PUT /v1/memory/keys``: replace the envelope if it is still at ``baseVersion``."""
    context = _context(request)
    caller = await authorize(context, request)
    body = await _protocol_body(context, request)
    try:
        parsed = parse_keys_request(body)
    except ValidationError as exc:
        raise _invalid(exc) from exc
    segment = caller.principal.segment
    async with context.locks.hold(keys_key(segment)):
        stored = await in_thread(
            write_keys, context.store, segment, parsed.envelope, parsed.base_version
        )
    log_event(logging.INFO, "keys", user=segment, encrypted=stored.envelope is not None)
    answer = KeysResponse(stored.envelope, stored.version, context.settings.quotas, caller.plan)
    return json_response(answer.encode())


async def snapshot(request: Request) -> Response:
    """``POST /v1/memory/snapshot``."""
    context = _context(request)
    caller = await authorize(context, request, defer_erase_check=True)
    parsed = await _scoped_body(context, request, parse_snapshot_request)
    prefix = scope_prefix(caller.principal.segment, parsed.scope)
    segment = caller.principal.segment
    result = await in_thread(context.scopes.snapshot, prefix, parsed, caller.plan, segment)
    if not result.unchanged or parsed.want:
        # An idle check reads the manifest's head only (docs/scaling.md); it returns no note,
        # and an encrypted account's plain scopes are erased, so their next check is not idle.
        await in_thread(check_scope_allowed, context.store, segment, parsed.scope)
    # Up to maxResponseBytes of JSON: encode it off the event loop.
    return json_response(await in_thread(result.encode, parsed.protocol))


async def commit(request: Request) -> Response:
    """``POST /v1/memory/commit``."""
    context = _context(request)
    caller = await authorize(context, request)
    parsed = await _scoped_body(context, request, parse_commit_request)
    quotas = context.settings.quotas
    if len(parsed.changes) > quotas.max_changes_per_commit:
        raise SyncApiError(
            "too_large",
            f"{len(parsed.changes)} changes in one commit, at most "
            f"{quotas.max_changes_per_commit}: split it",
        )
    prefix = scope_prefix(caller.principal.segment, parsed.scope)
    await in_thread(check_scope_allowed, context.store, caller.principal.segment, parsed.scope)
    limits = CommitLimits(
        quotas,
        context.settings.free_plan_limits if caller.plan == "free" else None,
        context.settings.frontmatter_allowance,
    )
    async with context.locks.hold(prefix):
        result = await in_thread(context.scopes.commit, prefix, parsed, limits, caller.plan)
    return json_response(result.encode())


async def list_scopes(request: Request) -> Response:
    """``GET /v1/memory/scopes``: every scope the account keeps (what a migration copies)."""
    context = _context(request)
    caller = await authorize(context, request)
    found = await in_thread(account_scopes, context.store, caller.principal.segment)
    answer = ScopesResponse(found, context.settings.quotas, caller.plan)
    return json_response(answer.encode())


async def erase_scope(request: Request) -> Response:
    """``POST /v1/memory/scopes/erase``: remove one of the caller's scopes (the manifest
    first, then every revision); what a migration to end-to-end encryption does last."""
    context = _context(request)
    caller = await authorize(context, request)
    parsed = await _scoped_body(context, request, parse_scope_erase_request)
    prefix = scope_prefix(caller.principal.segment, parsed.scope)
    async with context.locks.hold(prefix):
        deleted = await in_thread(
            delete_prefixes, context.store, [prefix], context.settings.io_concurrency
        )
    log_event(logging.INFO, "scope_erase", user=caller.principal.segment, deleted=deleted)
    answer = ScopeEraseResponse(deleted, context.settings.quotas, caller.plan)
    return json_response(answer.encode())


def _check_admin_key(request: Request) -> None:
    expected: bytes = request.app.state.admin_key
    scheme, _, given = (request.headers.get("authorization") or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode("utf-8"), expected
    ):
        raise SyncApiError("unauthorized", "the admin key is missing or wrong")


async def erase(request: Request) -> Response:
    """``POST /v1/admin/erase`` (only mounted when an admin key is configured)."""
    context = _context(request)
    _check_admin_key(request)
    try:
        parsed: EraseRequest = parse_erase_request(await read_json_body(request, 64 * 1024))
    except ValidationError as exc:
        raise _invalid(exc) from exc
    kind, target = parsed.target
    now = context.clock()
    concurrency = context.settings.io_concurrency
    if kind == "userId":
        deleted = await in_thread(_erase_user, context, target, now, concurrency)
    else:
        deleted = await in_thread(_erase_team, context, target, now, concurrency)
    segment = user_key_segment(target)
    log_event(logging.INFO, "erase", kind=kind, target=segment, deleted=deleted)
    answer = EraseResponse({kind: target}, deleted, context.settings.quotas)
    return json_response(answer.encode())


def _erase_user(context: ServerContext, user_id: str, now: int, concurrency: int) -> int:
    return context.scopes.erase_user(user_id, now=now, concurrency=concurrency)


def _erase_team(context: ServerContext, team_id: str, now: int, concurrency: int) -> int:
    return context.scopes.erase_team(team_id, now=now, concurrency=concurrency)


async def healthz(request: Request) -> Response:
    """``/healthz``: 200 when storage answers, else 503."""
    context = _context(request)
    await in_thread(context.store.ping)
    return json_response(HealthResponse(context.settings.quotas).encode())


MEMORY_OPERATIONS: tuple[Operation, ...] = (
    Operation("/v1/memory/identity", "GET", identity, Identity),
    Operation("/v1/memory/snapshot", "POST", snapshot, SnapshotResponse, SnapshotRequestBody),
    Operation("/v1/memory/commit", "POST", commit, CommitResponse, CommitRequestBody),
    Operation("/v1/memory/keys", "GET", get_keys, KeysResponse),
    Operation("/v1/memory/scopes", "GET", list_scopes, ScopesResponse),
    Operation(
        "/v1/memory/scopes/erase", "POST", erase_scope, ScopeEraseResponse, ScopeEraseRequestBody
    ),
    Operation("/v1/memory/keys", "PUT", put_keys, KeysResponse, KeysRequestBody),
    Operation("/healthz", "GET", healthz, HealthResponse, errors="health", bearer=False),
)
ADMIN_OPERATIONS: tuple[Operation, ...] = (
    Operation("/v1/admin/erase", "POST", erase, EraseResponse, EraseRequest, errors="admin"),
)


def operations(admin: bool) -> tuple[Operation, ...]:
    """The routes served (the admin route only when an admin key is configured)."""
    return MEMORY_OPERATIONS + (ADMIN_OPERATIONS if admin else ())


def routes(served: tuple[Operation, ...], extra: list[Route]) -> list[Route]:
    """Starlette routes of ``served`` and ``extra``."""
    found: list[Route] = [Route(op.path, op.endpoint, methods=[op.method]) for op in served]
    return found + extra
