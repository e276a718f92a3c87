"""Structured JSON logs with request ids (spec 08). Never note content, never tokens.

:class:`RequestLogMiddleware` gives every request an id (a safe incoming ``X-Request-Id`` or a
new one), echoes it in the response and logs one ``request`` line when the request ends. Log
calls anywhere in the server pass their fields as ``extra={"fields": {...}}``; the request id
rides along in a context variable (worker threads started by Starlette inherit it).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOGGER_NAME: Final = "oharness.server"
REQUEST_ID: ContextVar[str | None] = ContextVar("oharness_request_id", default=None)
_SAFE_REQUEST_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")

logger = logging.getLogger(LOGGER_NAME)


def log_event(level: int, event: str, **fields: Any) -> None:
    """Log one structured event (``fields`` must hold no note content and no secrets)."""
    request_id = REQUEST_ID.get()
    if request_id is not None:
        fields = {"requestId": request_id, **fields}
    logger.log(level, event, extra={"fields": {"event": event, **fields}})


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id is not None:
            entry["requestId"] = request_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_json_logging(level: int = logging.INFO, stream: IO[str] | None = None) -> None:
    """Send the server's and uvicorn's logs to ``stream`` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLogFormatter())
    for name in (LOGGER_NAME, "uvicorn", "uvicorn.error"):
        target = logging.getLogger(name)
        target.handlers = [handler]
        target.setLevel(level)
        target.propagate = False


class RequestLogMiddleware:
    """Request ids and one access-log line per request (method, path, status, duration)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = _header(scope, b"x-request-id")
        request_id = (
            incoming if incoming and _SAFE_REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        )
        token = REQUEST_ID.set(request_id)
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode("ascii")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            log_event(
                logging.INFO,
                "request",
                method=scope.get("method"),
                path=scope.get("path"),
                status=status,
                durationMs=round((time.perf_counter() - started) * 1000, 2),
                user=state.get("user_segment"),
            )
            REQUEST_ID.reset(token)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            try:
                return str(value.decode("ascii"))
            except UnicodeDecodeError:
                return None
    return None
