"""The sync server's ASGI application (spec 08): :func:`create_app` over a store and settings.

Stateless: every request reads and writes the object store, so replicas behind a load balancer
over one bucket need no coordination beyond the manifest compare-and-swap. The rate limiter and
the per-scope commit queue are per replica by design.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from oharness.errors import StorageError
from oharness.server.auth import TokenVerifier
from oharness.server.config import ServerSettings
from oharness.server.context import ServerContext
from oharness.server.logs import RequestLogMiddleware, log_event
from oharness.server.openapi import openapi_document
from oharness.server.ratelimit import MonotonicClock, RateLimiter
from oharness.server.responses import SyncApiError, error_response, json_response
from oharness.server.routes import Operation, operations, routes
from oharness.server.scope_service import ScopeService, wall_clock
from oharness.storage.object_store import ObjectStore
from oharness.sync.protocol import Plan
from oharness.types import Clock


def create_app(
    store: ObjectStore,
    settings: ServerSettings,
    *,
    clock: Clock = wall_clock,
    monotonic: MonotonicClock = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> Starlette:
    """The sync server over ``store``; time, sleeping and randomness are injectable."""
    served = operations(admin=bool(settings.admin_key))

    async def openapi(request: Request) -> Response:
        return Response(_openapi_body(served), media_type="application/json")

    app = Starlette(routes=routes(served, [Route("/openapi.json", openapi, methods=["GET"])]))
    app.state.context = ServerContext(
        settings=settings,
        store=store,
        verifier=TokenVerifier(settings.jwt),
        limiter=RateLimiter(settings.rate_per_minute, monotonic),
        scopes=ScopeService(
            store, settings, clock=clock, sleep=sleep, rng=rng, monotonic=monotonic
        ),
        clock=clock,
    )
    app.state.admin_key = (settings.admin_key or "").encode("utf-8")
    _install_error_handlers(app, settings)
    app.add_middleware(RequestLogMiddleware)
    return app


@functools.cache
def _openapi_body(served: tuple[Operation, ...]) -> bytes:
    """The OpenAPI document of ``served``, built at its first request (it takes longer than the
    rest of the server's start-up)."""
    return bytes(json_response(openapi_document(served)).body)


def _plan_of(request: Request) -> Plan:
    plan = getattr(request.state, "plan", "free")
    return "paid" if plan == "paid" else "free"


def _install_error_handlers(app: Starlette, settings: ServerSettings) -> None:
    quotas = settings.quotas

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SyncApiError)
        return error_response(exc, quotas, _plan_of(request))

    async def on_storage_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StorageError)
        log_event(logging.WARNING, "storage_error", error=type(exc).__name__, detail=exc.message)
        error = SyncApiError(
            "unavailable",
            f"storage is unavailable or too busy ({exc.message}); retry later",
            retry_after=settings.unavailable_retry_after,
        )
        return error_response(error, quotas, _plan_of(request))

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 405:
            error = SyncApiError("method_not_allowed", "this route does not take that method")
        else:
            error = SyncApiError("not_found", f"no such route: {request.url.path}")
        response = error_response(error, quotas, _plan_of(request))
        allow = (exc.headers or {}).get("Allow")
        if exc.status_code == 405 and allow:
            response.headers["Allow"] = allow
        return response

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log_event(logging.ERROR, "internal_error", error=type(exc).__name__)
        error = SyncApiError("internal", "the server failed unexpectedly; retry later")
        return error_response(error, quotas, _plan_of(request))

    app.add_exception_handler(SyncApiError, on_api_error)
    app.add_exception_handler(StorageError, on_storage_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
