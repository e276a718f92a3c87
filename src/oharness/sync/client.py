"""The HTTP side of sync: identity, snapshot and commit over httpx2 (spec 06).

Every failure becomes a :class:`~oharness.errors.SyncError` whose ``code`` is the server's
error code (``network`` when the server could not be reached); httpx2's exceptions never leak.
The transport is injectable (an ``httpx2.Client``), so tests and the multi-device simulation
run the real client against an in-process app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import httpx2
import msgspec

from oharness.errors import SyncError, ValidationError
from oharness.sync.protocol import (
    CommitRequest,
    CommitResponse,
    ErrorResponse,
    Identity,
    JsonObject,
    KeysRequest,
    KeysResponse,
    ScopeEraseRequest,
    ScopeEraseResponse,
    ScopesResponse,
    SnapshotRequest,
    SnapshotResponse,
    SyncScope,
    decode,
)

DEFAULT_TIMEOUT = 30.0
_JSON = {"Content-Type": "application/json"}
_Answer = TypeVar("_Answer")


class SyncClient:
    """One account at one origin."""

    #: Whether it speaks to the account's end-to-end encrypted copy (:class:`SealedClient`).
    sealed = False

    def __init__(
        self,
        origin: str,
        token: str,
        *,
        http: httpx2.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        on_request: Callable[[], None] | None = None,
    ) -> None:
        self.origin = origin.rstrip("/")
        self._token = token
        self._http = http if http is not None else httpx2.Client(timeout=timeout)
        self._owns_http = http is None
        self._on_request = on_request

    @property
    def token(self) -> str:
        """The bearer token this client sends."""
        return self._token

    @property
    def http(self) -> httpx2.Client:
        """The connection pool (shared with a client made from this one)."""
        return self._http

    def close(self) -> None:
        """Release the connection pool (when this client created it)."""
        if self._owns_http:
            self._http.close()

    def _request(
        self, method: str, path: str, answer: type[_Answer], body: bytes | None = None
    ) -> _Answer:
        headers = {"Authorization": f"Bearer {self._token}", **(_JSON if body else {})}
        if self._on_request is not None:
            self._on_request()  # the process-wide request budget (spec 07.5)
        try:
            response = self._http.request(method, self.origin + path, headers=headers, content=body)
        except httpx2.HTTPError as exc:
            raise SyncError(
                f"cannot reach the sync server at {self.origin} ({type(exc).__name__}); local "
                "notes keep working",
                code="network",
            ) from exc
        if response.status_code != 200:
            raise self._error(response)
        try:
            return decode(response.content, answer, f"the server's {path.rsplit('/', 1)[-1]}")
        except ValidationError:
            if _is_json_object(response.content):
                raise  # our server's JSON of the wrong shape: say which field
            raise self._error(response) from None

    def _error(self, response: httpx2.Response) -> SyncError:
        retry = response.headers.get("Retry-After")
        retry_after = float(retry) if retry and retry.replace(".", "", 1).isdigit() else None
        try:
            error = decode(response.content, ErrorResponse, "error response")
        except ValidationError:  # not our server's JSON (a proxy page, say): report the status
            return SyncError(
                f"the sync server answered HTTP {response.status_code} without a readable "
                "error; check the origin URL",
                code="unavailable" if response.status_code >= 500 else "invalid_response",
                status=response.status_code,
                retry_after=retry_after,
            )
        return SyncError(
            error.message,
            code=error.error,
            status=response.status_code,
            retry_after=retry_after,
            **dict(error.details),
        )

    def identity(self) -> Identity:
        """``GET /v1/memory/identity``."""
        return self._request("GET", "/v1/memory/identity", Identity)

    def snapshot(self, request: SnapshotRequest) -> SnapshotResponse:
        """``POST /v1/memory/snapshot``."""
        return self._request("POST", "/v1/memory/snapshot", SnapshotResponse, request.encode())

    def commit(self, request: CommitRequest) -> CommitResponse:
        """``POST /v1/memory/commit``."""
        return self._request("POST", "/v1/memory/commit", CommitResponse, request.encode())

    def keys(self) -> KeysResponse:
        """``GET /v1/memory/keys``: the account's key envelope (end-to-end encryption)."""
        return self._request("GET", "/v1/memory/keys", KeysResponse)

    def put_keys(self, envelope: JsonObject | None, base_version: int) -> KeysResponse:
        """``PUT /v1/memory/keys``: replace the envelope stored at ``base_version``."""
        body = KeysRequest(envelope, base_version).encode()
        return self._request("PUT", "/v1/memory/keys", KeysResponse, body)

    def scopes(self) -> ScopesResponse:
        """``GET /v1/memory/scopes``: every scope the account keeps on the server."""
        return self._request("GET", "/v1/memory/scopes", ScopesResponse)

    def erase_scope(self, scope: SyncScope) -> ScopeEraseResponse:
        """``POST /v1/memory/scopes/erase``: remove one scope from the server."""
        body = ScopeEraseRequest(scope).encode()
        return self._request("POST", "/v1/memory/scopes/erase", ScopeEraseResponse, body)


def _is_json_object(data: bytes) -> bool:
    try:
        return isinstance(msgspec.json.decode(data), dict)
    except msgspec.DecodeError:
        return False
