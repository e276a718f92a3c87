"""JSON responses and request bodies: every answer carries ``quotas`` and ``plan`` (spec 06.2).

:class:`SyncApiError` is how a handler refuses a request; the app's exception handler turns it into
the error body of spec 06.6, ``{"error", "message", "quotas", "plan", …}``, with ``Retry-After``
on 429 and 503.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from oharness.errors import OHarnessError
from oharness.sync.protocol import ERROR_STATUS, JsonObject, Plan, Quotas, error_from_details

#: Bodies larger than this are decoded in a worker thread.
_PARSE_IN_THREAD_BYTES = 256 * 1024
#: Codes outside the protocol's table, for routes that do not exist and for bugs.
_EXTRA_STATUS = {"not_found": 404, "method_not_allowed": 405, "internal": 500}


class SyncApiError(OHarnessError):
    """A request the sync server refused (internal to it, the daemon's is
    :class:`~oharness.daemon.errors.DaemonApiError`): an error code of the table, a message
    saying what to do, and extra body fields (``conflicts``, ``protocols``) or a
    ``Retry-After`` in seconds."""

    def __init__(
        self, code: str, message: str, *, retry_after: int | None = None, **details: Any
    ) -> None:
        super().__init__(message, **details)
        self.code = code
        self.retry_after = retry_after

    @property
    def status(self) -> int:
        """The HTTP status of this code."""
        return ERROR_STATUS.get(self.code) or _EXTRA_STATUS.get(self.code, 500)


def json_response(
    body: JsonObject | bytes, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A compact UTF-8 JSON response (``body`` as JSON values, or already encoded)."""
    if not isinstance(body, bytes):
        body = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def error_response(error: SyncApiError, quotas: Quotas, plan: Plan) -> Response:
    """The error body of spec 06.6 for ``error``."""
    body = error_from_details(error.code, error.message, quotas, plan, error.details).encode()
    headers = {}
    if error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    if error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return json_response(body, error.status, headers)


async def read_json_body(request: Request, limit: int) -> object:
    """The decoded JSON body, read with a size cap (Content-Length is not trusted alone)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    data = b"".join(chunks)
    if len(data) > _PARSE_IN_THREAD_BYTES:  # keep the event loop free for other requests
        return await run_in_threadpool(_decode_json, data)
    return _decode_json(data)


def _decode_json(data: bytes) -> object:
    try:
        value = json.loads(data.decode("utf-8"))
        if b"\\u" in data:  # an escape may decode to a lone surrogate: not text
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError as exc:
        raise SyncApiError(
            "invalid_request",
            "the request body holds a lone surrogate escape (such as \\ud800), which is not "
            "valid Unicode text",
        ) from exc
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError covers malformed JSON and integers over Python's digit limit.
        raise SyncApiError(
            "invalid_request", f"the request body is not valid UTF-8 JSON: {exc}"
        ) from exc


def _too_large(limit: int) -> SyncApiError:
    return SyncApiError(
        "too_large",
        f"the request is over {limit} bytes, the server's request limit; send smaller commits "
        "(oharness clients size them to fit)",
    )
