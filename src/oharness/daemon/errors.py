"""The daemon's refusals: HTTP errors ``{"error": message, "code": code}`` and task failures.

The body shape is deliberately the reference implementation's (spec 10.1), not the sync
server's, so existing clients of that API work unchanged.
"""

from __future__ import annotations

from starlette.responses import JSONResponse

from oharness.errors import OHarnessError


class DaemonApiError(OHarnessError):
    """A request the daemon refused (internal to it, the sync server's is
    :class:`~oharness.server.responses.SyncApiError`): turned into its HTTP error body."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.retry_after = retry_after

    def response(self) -> JSONResponse:
        headers = {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}
        if self.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        if self.status == 413:  # the rest of the body is not read: this connection ends
            headers["Connection"] = "close"
        body = {"error": self.message, "code": self.code}
        return JSONResponse(body, status_code=self.status, headers=headers)


class TaskFailure(OHarnessError):
    """A task that fails with a stable code (``*_failed``, ``remember_path_escape``)."""

    def __init__(self, code: str, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.detail = detail
