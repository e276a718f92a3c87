"""The S3 object store (``s3://BUCKET/PREFIX``): AWS S3, Cloudflare R2, MinIO, SeaweedFS, Ceph.

Compare-and-swap uses S3 conditional writes: ``If-Match: ETAG`` to replace a version and
``If-None-Match: *`` to create. Stores disagree on how a failed condition looks — AWS answers
404 to ``If-Match`` on a missing key, R2 and SeaweedFS 412, and a write racing another
conditional write may get 409 — so all three become
:class:`~oharness.errors.PreconditionFailed` ("re-read and retry"). Every other failure
(network, timeouts, credentials, a missing bucket, throttling) becomes
:class:`~oharness.errors.StorageUnavailable`; no boto3 or botocore exception leaves this module.

boto3 is an optional dependency (``pip install 'oharness[s3]'``), imported only when a client
is built, so importing this module stays cheap and works without it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Final, NoReturn

from oharness.errors import PreconditionFailed, StorageUnavailable, UnavailableError
from oharness.storage.object_store import NOT_MODIFIED, NotModified, StoredObject
from oharness.storage.validation import validate_condition, validate_key, validate_prefix

__all__ = ["S3ObjectStore", "s3_client_from_environment"]

CONNECT_TIMEOUT_SECONDS: Final = 5.0
READ_TIMEOUT_SECONDS: Final = 30.0
#: attempts per request, the first included (botocore retries timeouts, 5xx and throttling)
MAX_ATTEMPTS: Final = 3
MAX_POOL_CONNECTIONS: Final = 64
_CONDITION_FAILED_STATUSES: Final = frozenset({409, 412})
_CONDITION_FAILED_CODES: Final = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})
_ABSENT_CODES: Final = frozenset({"NoSuchKey", "NotFound", "404"})
_NOT_MODIFIED_CODES: Final = frozenset({"304", "NotModified"})


def s3_client_from_environment(environ: Mapping[str, str]) -> Any:
    """A boto3 S3 client configured from the standard AWS variables found in ``environ``.

    Reads ``AWS_ENDPOINT_URL_S3`` (or ``AWS_ENDPOINT_URL``), ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN`` and ``AWS_REGION`` (or
    ``AWS_DEFAULT_REGION``, else ``us-east-1``). What ``environ`` leaves out falls back to
    boto3's own configuration (its environment variables, shared config files, instance and
    container roles), so IAM roles work. Addressing is path-style, so any S3-compatible endpoint
    works without DNS per bucket.
    """
    boto3 = _import("boto3")
    botocore_config = _import("botocore.config")
    config = botocore_config.Config(
        s3={"addressing_style": "path"},
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"total_max_attempts": MAX_ATTEMPTS, "mode": "standard"},
        max_pool_connections=MAX_POOL_CONNECTIONS,
        # Checksums only where the API requires them: several S3-compatible stores reject the
        # flexible checksums boto3 sends by default since 1.36.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    session = boto3.session.Session(
        aws_access_key_id=environ.get("AWS_ACCESS_KEY_ID") or None,
        aws_secret_access_key=environ.get("AWS_SECRET_ACCESS_KEY") or None,
        aws_session_token=environ.get("AWS_SESSION_TOKEN") or None,
        region_name=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1",
    )
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or None
    client = session.client("s3", endpoint_url=endpoint, config=config)
    client.meta.events.register("before-send.s3.PutObject", _drop_expect_continue)
    return client


class S3ObjectStore:
    """Objects under ``prefix`` in an S3 bucket, with compare-and-swap on ETags."""

    def __init__(self, bucket: str, prefix: str = "", client: Any | None = None) -> None:
        prefix = prefix.strip("/")
        if prefix:
            validate_key(prefix)
        self.bucket = bucket
        self.prefix = f"{prefix}/" if prefix else ""
        exceptions = _import("botocore.exceptions")
        self._client_error: type[Exception] = exceptions.ClientError
        self._botocore_error: type[Exception] = exceptions.BotoCoreError
        self._client = client if client is not None else s3_client_from_environment({})

    def __repr__(self) -> str:
        return f"S3ObjectStore(s3://{self.bucket}/{self.prefix})"

    def get(self, key: str) -> StoredObject | None:
        """The object at ``key`` with its ETag, or ``None`` when absent."""
        found = self._get(key, {})
        assert not isinstance(found, NotModified)  # only a conditional read answers 304
        return found

    def get_if_changed(self, key: str, etag: str) -> StoredObject | NotModified | None:
        """:data:`NOT_MODIFIED` while ``key`` still has ``etag`` (``If-None-Match``: the store
        answers 304 and sends no bytes), else as :meth:`get`."""
        return self._get(key, {"IfNoneMatch": etag})

    def _get(self, key: str, conditions: dict[str, str]) -> StoredObject | NotModified | None:
        name = self._name(key)
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=name, **conditions)
            with response["Body"] as body:
                data = body.read()
        except self._client_error as exc:
            code = _error_code(exc)
            if code in _ABSENT_CODES:
                return None
            if conditions and (code in _NOT_MODIFIED_CODES or _http_status(exc) == 304):
                return NOT_MODIFIED
            self._raise_unavailable("read", key, exc)
        except self._botocore_error as exc:
            self._raise_unavailable("read", key, exc)
        return StoredObject(bytes(data), str(response["ETag"]))

    def put(
        self,
        key: str,
        data: bytes,
        *,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> str:
        """Write ``data``; conditional when asked; returns the new ETag."""
        name = self._name(key)
        validate_condition(if_match, if_none_match)
        arguments: dict[str, Any] = {"Bucket": self.bucket, "Key": name, "Body": bytes(data)}
        if if_match is not None:
            arguments["IfMatch"] = if_match
        if if_none_match:
            arguments["IfNoneMatch"] = "*"
        try:
            response = self._client.put_object(**arguments)
        except self._client_error as exc:
            status, code = _http_status(exc), _error_code(exc)
            conditional = if_match is not None or if_none_match
            if conditional and (
                status in _CONDITION_FAILED_STATUSES or code in _CONDITION_FAILED_CODES
            ):
                raise _precondition_failed(key, f"{status} {code}") from exc
            if if_match is not None and status == 404 and code != "NoSuchBucket":
                raise _precondition_failed(key, "it does not exist") from exc
            self._raise_unavailable("write", key, exc)
        except self._botocore_error as exc:
            self._raise_unavailable("write", key, exc)
        return str(response["ETag"])

    def delete(self, key: str) -> None:
        """Remove ``key``; absent keys are fine."""
        name = self._name(key)
        try:
            self._client.delete_object(Bucket=self.bucket, Key=name)
        except self._client_error as exc:
            if _error_code(exc) not in _ABSENT_CODES:
                self._raise_unavailable("delete", key, exc)
        except self._botocore_error as exc:
            self._raise_unavailable("delete", key, exc)

    def list(self, prefix: str) -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        validate_prefix(prefix)
        keys: set[str] = set()
        try:
            paginator = self._client.get_paginator("list_objects_v2")
            pages = paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix)
            for page in pages:
                for entry in page.get("Contents", ()):
                    keys.add(str(entry["Key"])[len(self.prefix) :])
        except (self._client_error, self._botocore_error) as exc:
            self._raise_unavailable("list", prefix, exc)
        return sorted(keys)

    def ping(self) -> None:
        """Check that the bucket exists and the credentials may use it."""
        try:
            self._client.head_bucket(Bucket=self.bucket)
        except (self._client_error, self._botocore_error) as exc:
            self._raise_unavailable("reach", "", exc)

    def _name(self, key: str) -> str:
        return self.prefix + validate_key(key)

    def _raise_unavailable(self, action: str, key: str, exc: Exception) -> NoReturn:
        if isinstance(exc, self._client_error):
            reason = f"{_http_status(exc)} {_error_code(exc)}: {_error_message(exc)}"
        else:
            reason = str(exc) or type(exc).__name__
        target = f"{key} in " if key else ""
        raise StorageUnavailable(
            f"S3 storage could not {action} {target}s3://{self.bucket}/{self.prefix} ({reason}); "
            "check the endpoint, the credentials and that the bucket exists, then retry",
            bucket=self.bucket,
            key=key,
        ) from exc


def _drop_expect_continue(request: Any, **_: Any) -> None:
    """Send bodies at once instead of waiting for ``100 Continue``.

    botocore asks for ``100 Continue`` before every PutObject body and waits up to a second
    for it. Our objects are small, so the handshake only costs a round trip, and stores that
    answer it late (SeaweedFS while another write holds the key) add a whole second to a
    compare-and-swap. The header is not signed, so removing it keeps the signature valid.
    """
    if "Expect" in request.headers:
        del request.headers["Expect"]


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise UnavailableError(
            "S3 storage needs boto3, which is not installed: pip install 'oharness[s3]'",
            module=name,
        ) from exc


def _response(exc: Exception) -> Mapping[str, Any]:
    response = getattr(exc, "response", None)
    return response if isinstance(response, Mapping) else {}


def _error_code(exc: Exception) -> str:
    return str(_response(exc).get("Error", {}).get("Code", ""))


def _error_message(exc: Exception) -> str:
    return str(_response(exc).get("Error", {}).get("Message", "")) or "no message"


def _http_status(exc: Exception) -> int:
    status = _response(exc).get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return status if isinstance(status, int) else 0


def _precondition_failed(key: str, reason: str) -> PreconditionFailed:
    return PreconditionFailed(
        f"conditional write to {key} failed ({reason}); re-read it and retry", key=key
    )
