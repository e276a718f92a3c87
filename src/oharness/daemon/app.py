"""The daemon's ASGI application (spec 10): :func:`create_app` over :class:`DaemonOptions`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from oharness import __version__
from oharness.daemon.auth import DaemonAuth, load_or_create_token
from oharness.daemon.background.note_watch import NoteWatcher
from oharness.daemon.errors import DaemonApiError
from oharness.daemon.guards import (
    MAX_BODY_BYTES,
    body_too_large,
    declared_length,
    with_security_headers,
)
from oharness.daemon.mcp_socket import start_mcp_socket
from oharness.daemon.page import page_router
from oharness.daemon.page.signin import signin_required, wants_page
from oharness.daemon.routes.memory import memory_router
from oharness.daemon.routes.notes import notes_router
from oharness.daemon.routes.openapi import finish_document
from oharness.daemon.routes.recall import RecallFastPath, add_recall_paths, recall_target
from oharness.daemon.routes.sync import sync_router
from oharness.daemon.routes.workspaces import workspaces_router
from oharness.daemon.sanitize import sanitise_details
from oharness.daemon.state import DaemonOptions, DaemonState

log = logging.getLogger(__name__)
#: Paths that prove who is asking some other way (the one-time code).
_OPEN_PATHS = frozenset({"/auth"})
#: The page's vendored scripts and stylesheet hold no data: served to anyone on this host.
_PUBLIC_PREFIX = "/memory/static/"


class AuthMiddleware:
    """Auth before anything else (even routing), then the Host and Origin checks, then a
    declared body over the daemon's limit (refused before a byte of it is read)."""

    def __init__(self, app: ASGIApp, auth: DaemonAuth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        method = scope.get("method", "GET")
        try:
            if method == "GET" and str(scope.get("path", "")).startswith(_PUBLIC_PREFIX):
                self.auth.check_host(connection)
            else:
                self.auth.check(connection, method)
            length = declared_length(scope)
            if length is not None and length > MAX_BODY_BYTES:
                raise body_too_large()
        except DaemonApiError as exc:
            refusal: Response = exc.response()
            if exc.status == 401 and wants_page(connection, method):
                refusal = signin_required(connection)
            await self._pause(exc)
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _pause(self, exc: DaemonApiError) -> None:
        if exc.code == "too_many_attempts" and exc.retry_after is not None:
            await asyncio.sleep(self.auth.backoff.pause(exc.retry_after))


class DaemonApp(FastAPI):
    """FastAPI, with the two recall routes answered in front of its middleware stack.

    A hook waits for a recall on every prompt: those requests go through the auth checks and
    :class:`~oharness.daemon.routes.recall.RecallFastPath` only, not through the framework's
    error, telemetry and body-limit layers; every other request takes the usual way. Every
    answer, whichever way it came, carries the security headers
    (:data:`~oharness.daemon.guards.SECURITY_HEADERS`).
    """

    recall_front: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            send = with_security_headers(send)
        front = self.recall_front
        if front is not None and scope["type"] == "http" and recall_target(scope["path"])[0]:
            await front(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def _framework(self, scope: Scope, receive: Receive, send: Send) -> None:
        await super().__call__(scope, receive, send)


def create_app(options: DaemonOptions, *, auth: DaemonAuth | None = None) -> FastAPI:
    """The daemon for ``options.home``, with ``options.start``'s project as the default."""
    if auth is None:
        token = load_or_create_token(options.home)
        auth = DaemonAuth.for_host(token, options.bind_host, options.extra_hosts)
    state = DaemonState(options, auth)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if options.background_sync:
            state.start_sync()
        state.start_consolidation()
        if options.watch_seconds > 0:
            state.note_watcher = NoteWatcher(state, options.watch_seconds)
            state.folders.add(state.note_watcher)
        state.folders.start()  # the first look now: folders scheduled, the page's baseline
        state.stoppers.insert(0, state.folders.stop)
        stop_mcp = await start_mcp_socket(state)
        if stop_mcp is not None:
            state.stoppers.insert(0, stop_mcp)
        try:
            yield
        finally:
            await shutdown(state)

    app = DaemonApp(
        title="oharness daemon",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.daemon = state
    state.open_default()
    app.include_router(memory_router())
    app.include_router(notes_router())
    app.include_router(workspaces_router())
    app.include_router(sync_router())
    app.include_router(page_router())
    _install_error_handlers(app)
    app.add_middleware(AuthMiddleware, auth=auth)
    app.recall_front = AuthMiddleware(RecallFastPath(app._framework, state), auth)
    _add_bearer_scheme(app)
    return app


async def shutdown(state: DaemonState) -> None:
    """Drain every workspace (running tasks end ``workspace_removed``), end event streams."""
    for stop in list(state.stoppers):
        try:
            stop()
        except Exception:
            log.exception("a daemon service failed to stop")
    await state.registry.close()
    state.bus.close()


def _install_error_handlers(app: FastAPI) -> None:
    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, DaemonApiError)
        if exc.code == "too_many_attempts" and exc.retry_after is not None:  # a sign-in code
            await asyncio.sleep(request.app.state.daemon.auth.backoff.pause(exc.retry_after))
        return exc.response()

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 405:
            error = DaemonApiError(
                405, "method_not_allowed", "this route does not take that method"
            )
        else:
            error = DaemonApiError(404, "not_found", "no such route")
        response = error.response()
        allow = (exc.headers or {}).get("Allow")
        if exc.status_code == 405 and allow:
            response.headers["Allow"] = allow
        return response

    async def on_validation(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": "the request is malformed", "code": "invalid_request"}, 400)

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.error("daemon request failed: %s", sanitise_details(f"{type(exc).__name__}: {exc}"))
        return DaemonApiError(500, "internal", "the daemon failed unexpectedly").response()

    from fastapi.exceptions import RequestValidationError

    app.add_exception_handler(DaemonApiError, on_api_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(Exception, on_unexpected)


def _add_bearer_scheme(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            add_recall_paths(schema)
            app.openapi_schema = finish_document(schema)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
