"""One JSON POST to a model provider over httpx2: timeout, cancellation, error translation.

With a :class:`~oharness.harness.model.CancelToken` the request runs on a worker thread and the
caller returns as soon as the token is cancelled; the cancel also shuts down the sockets the
request is using (:mod:`~oharness.harness.transport`), so the provider sees the connection end at
once and the worker ends with it instead of running on to its timeout. A TCP connect still in
progress ends within its connect timeout (at most :data:`CONNECT_TIMEOUT_S`). httpx2 exceptions
never leave this module: they become :class:`ModelError` values.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import httpx2

from oharness.harness.model import CancelToken, ModelCancelled, ModelError
from oharness.harness.transport import AbortableTransport, CallSockets, abortable

#: A provider that has not accepted the TCP connection by then is down (reading the answer may
#: take the whole timeout).
CONNECT_TIMEOUT_S = 10.0
_ERROR_TEXT_CHARS = 300
_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def _error_text(response: httpx2.Response) -> str:
    """The provider's own error message, shortened (never the request, which may hold keys)."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:_ERROR_TEXT_CHARS].strip()
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:_ERROR_TEXT_CHARS]
        if isinstance(error, str):
            return error[:_ERROR_TEXT_CHARS]
    return json.dumps(data)[:_ERROR_TEXT_CHARS]


def _send(
    client: httpx2.Client,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    timeout_s: float,
    provider: str,
) -> dict[str, Any]:
    try:
        response = client.post(
            url,
            json=dict(body),
            headers=dict(headers),
            timeout=httpx2.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S)),
        )
    except httpx2.TimeoutException as exc:
        raise ModelError(
            f"{provider} did not answer within {timeout_s:g} s; try again, or raise the timeout",
            code="model_timeout",
            transient=True,
        ) from exc
    except httpx2.HTTPError as exc:
        raise ModelError(
            f"{provider} could not be reached at {url} ({type(exc).__name__}: {exc}); check the "
            "base URL and that the server is running",
            code="network",
            transient=True,
        ) from exc
    if response.status_code >= 400:
        hint = ""
        if response.status_code in (401, 403):
            hint = "; check the API key"
        raise ModelError(
            f"{provider} refused the request (HTTP {response.status_code}): "
            f"{_error_text(response)}{hint}",
            code="model_http",
            status=response.status_code,
            transient=response.status_code in _TRANSIENT_STATUS,
        )
    try:  # a stray byte that is not UTF-8 costs one character, not the whole answer
        data = json.loads(response.content.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise ModelError(
            f"{provider} answered with something that is not JSON; check the base URL",
            code="model_output",
        ) from exc
    if not isinstance(data, dict):
        raise ModelError(f"{provider} answered with unexpected JSON", code="model_output")
    return data


def post_json(
    client: httpx2.Client,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    timeout_s: float,
    provider: str,
    cancel: CancelToken | None = None,
) -> dict[str, Any]:
    """POST ``body`` and return the JSON answer, or raise :class:`ModelError`."""
    if cancel is None:
        return _send(client, url, headers, body, timeout_s, provider)
    cancel.check()
    wake = threading.Event()
    sockets = CallSockets()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            with abortable(sockets):
                outcome["data"] = _send(client, url, headers, body, timeout_s, provider)
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc
        finally:
            wake.set()

    def on_cancel() -> None:
        wake.set()
        sockets.abort()

    unsubscribe = cancel.on_cancel(on_cancel)
    worker = threading.Thread(target=work, name="oharness-model-call", daemon=True)
    worker.start()
    try:
        wake.wait()
    finally:
        unsubscribe()
    if "data" not in outcome and cancel.cancelled:
        raise ModelCancelled()  # the worker's error, if any, is only the aborted connection
    if "error" in outcome:
        raise outcome["error"]
    data: dict[str, Any] = outcome["data"]
    return data


class HttpChatModel:
    """What the provider adapters share: the model name, the base URL, one connection pool."""

    provider = "http"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._client = httpx2.Client(transport=transport or AbortableTransport())

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def close(self) -> None:
        """Release the HTTP connections."""
        self._client.close()
