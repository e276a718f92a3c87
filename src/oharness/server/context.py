"""What every route shares: settings, the store, the token verifier, the rate limiter, the
scope service, and :func:`authorize`, the gate every ``/v1/memory/*`` request passes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from oharness.server.auth import Principal, TokenRejected, TokenVerifier, effective_plan
from oharness.server.config import ServerSettings
from oharness.server.ratelimit import RateLimiter
from oharness.server.responses import SyncApiError
from oharness.server.scope_service import ScopeService
from oharness.storage.object_store import ObjectStore
from oharness.sync.protocol import Plan
from oharness.types import Clock

_T = TypeVar("_T")


class ScopeLocks:
    """One lock per scope on this replica: its commits queue here instead of racing for the
    manifest (compare-and-swap still guards against other replicas)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[anyio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold the lock of ``key`` for the duration of the block."""
        lock, users = self._locks.get(key, (anyio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


@dataclass
class ServerContext:
    """The parts of one app instance."""

    settings: ServerSettings
    store: ObjectStore
    verifier: TokenVerifier
    limiter: RateLimiter
    scopes: ScopeService
    clock: Clock
    locks: ScopeLocks = field(default_factory=ScopeLocks)


@dataclass(frozen=True)
class Caller:
    """An authorised caller and its effective plan."""

    principal: Principal
    plan: Plan
    erased_teams: frozenset[str]


async def in_thread(func: Callable[..., _T], *args: object) -> _T:
    """Run blocking storage work in the thread pool."""
    return await run_in_threadpool(func, *args)


async def authorize(
    context: ServerContext, request: Request, *, defer_erase_check: bool = False
) -> Caller:
    """Verify the token, apply the rate limit, refuse erased accounts, work out the plan.

    With ``defer_erase_check`` the account's erase marker is left to the caller (a snapshot
    checks it unless it answers ``unchanged``); the teams' are always checked (cached)."""
    try:
        principal = context.verifier.verify(request.headers.get("authorization"))
    except TokenRejected as exc:
        raise SyncApiError("unauthorized", exc.message) from exc
    request.state.user_segment = principal.segment
    request.state.plan = principal.claimed_plan
    wait = context.limiter.acquire(principal.segment)
    if wait is not None:
        raise SyncApiError(
            "rate_limited",
            f"too many requests for this account: retry in {wait} s",
            retry_after=wait,
        )
    if not defer_erase_check:
        await in_thread(context.scopes.check_not_erased, principal.segment)
    erased_teams: frozenset[str] = frozenset()
    if principal.teams:
        erased_teams = await in_thread(context.scopes.erase_gate.erased_teams, principal)
    plan = effective_plan(principal, erased_teams)
    request.state.plan = plan
    return Caller(principal, plan, erased_teams)
