"""The S3 adapter's translation of store answers and failures (no server needed).

The contract suite runs the same adapter against a real S3-protocol server; here botocore's
Stubber and small fakes play the answers that server never gives (AWS's 404 to If-Match, 409,
throttling, timeouts), so every mapping is checked.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from oharness.errors import PreconditionFailed, StorageUnavailable, UnavailableError
from oharness.storage.s3 import S3ObjectStore, s3_client_from_environment

ENVIRON = {
    "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9",
    "AWS_ACCESS_KEY_ID": "test-key",
    "AWS_SECRET_ACCESS_KEY": "test-secret",
    "AWS_REGION": "auto",
}


@pytest.fixture
def client() -> Any:
    return s3_client_from_environment(ENVIRON)


@pytest.fixture
def stub(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def store(client: Any) -> S3ObjectStore:
    return S3ObjectStore("bucket", "tenant/a", client)


def put_params(key: str, **extra: Any) -> dict[str, Any]:
    return {"Bucket": "bucket", "Key": f"tenant/a/{key}", "Body": ANY, **extra}


def test_the_client_uses_the_given_environment(client: Any) -> None:
    assert client.meta.endpoint_url == "http://127.0.0.1:9"
    assert client.meta.region_name == "auto"
    assert client.meta.config.s3 == {"addressing_style": "path"}
    assert client.meta.config.connect_timeout == 5.0
    assert client.meta.config.retries["total_max_attempts"] == 3


def test_the_region_defaults_and_no_endpoint_means_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    client = s3_client_from_environment({})
    assert client.meta.region_name == "us-east-1"
    assert "amazonaws.com" in client.meta.endpoint_url


def test_get_returns_bytes_and_the_etag_and_none_for_no_such_key(
    store: S3ObjectStore, stub: Stubber
) -> None:
    body = StreamingBody(io.BytesIO(b"content"), len(b"content"))
    stub.add_response(
        "get_object",
        {"Body": body, "ETag": '"e1"'},
        {"Bucket": "bucket", "Key": "tenant/a/k"},
    )
    stub.add_client_error("get_object", "NoSuchKey", http_status_code=404)
    found = store.get("k")
    assert found is not None and (found.data, found.etag) == (b"content", '"e1"')
    assert store.get("absent") is None


def test_conditional_puts_send_the_headers_and_return_the_etag(
    store: S3ObjectStore, stub: Stubber
) -> None:
    stub.add_response("put_object", {"ETag": '"e2"'}, put_params("m", IfNoneMatch="*"))
    stub.add_response("put_object", {"ETag": '"e3"'}, put_params("m", IfMatch='"e2"'))
    stub.add_response("put_object", {"ETag": '"e4"'}, put_params("m"))
    assert store.put("m", b"1", if_none_match=True) == '"e2"'
    assert store.put("m", b"2", if_match='"e2"') == '"e3"'
    assert store.put("m", b"3") == '"e4"'


@pytest.mark.parametrize(
    ("code", "status", "if_match"),
    [
        ("PreconditionFailed", 412, '"old"'),  # stale ETag (everyone), absent key (R2, SeaweedFS)
        ("PreconditionFailed", 412, None),  # If-None-Match on a present key
        ("NoSuchKey", 404, '"old"'),  # AWS: If-Match on an absent key
        ("ConditionalRequestConflict", 409, '"old"'),  # a racing conditional write
        ("ConditionalRequestConflict", 409, None),
    ],
)
def test_every_failed_condition_is_a_precondition_failure(
    store: S3ObjectStore, stub: Stubber, code: str, status: int, if_match: str | None
) -> None:
    stub.add_client_error("put_object", code, http_status_code=status)
    with pytest.raises(PreconditionFailed, match="re-read it and retry"):
        store.put("m", b"x", if_match=if_match, if_none_match=if_match is None)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("NoSuchBucket", 404),
        ("AccessDenied", 403),
        ("InvalidAccessKeyId", 403),
        ("SlowDown", 503),
        ("InternalError", 500),
    ],
)
def test_other_answers_are_unavailability(
    store: S3ObjectStore, stub: Stubber, code: str, status: int
) -> None:
    stub.add_client_error("put_object", code, http_status_code=status)
    stub.add_client_error("get_object", code, http_status_code=status)
    stub.add_client_error("list_objects_v2", code, http_status_code=status)
    stub.add_client_error("delete_object", code, http_status_code=status)
    stub.add_client_error("head_bucket", code, http_status_code=status)
    with pytest.raises(StorageUnavailable, match=code) as raised:
        store.put("m", b"x", if_match='"e"')
    assert "s3://bucket/tenant/a/" in raised.value.message
    for call in (
        lambda: store.get("m"),
        lambda: store.list(""),
        lambda: store.delete("m"),
        store.ping,
    ):
        with pytest.raises(StorageUnavailable, match=code):
            call()


def test_an_unconditional_put_never_reports_a_failed_condition(
    store: S3ObjectStore, stub: Stubber
) -> None:
    stub.add_client_error("put_object", "OperationAborted", http_status_code=409)
    with pytest.raises(StorageUnavailable, match="OperationAborted"):
        store.put("m", b"x")


def test_list_pages_are_joined_relative_to_the_prefix_and_sorted(
    store: S3ObjectStore, stub: Stubber
) -> None:
    stub.add_response(
        "list_objects_v2",
        {
            "Contents": [{"Key": "tenant/a/users/b"}, {"Key": "tenant/a/users/a"}],
            "IsTruncated": True,
            "NextContinuationToken": "next",
        },
        {"Bucket": "bucket", "Prefix": "tenant/a/users/"},
    )
    stub.add_response(
        "list_objects_v2",
        {"Contents": [{"Key": "tenant/a/users/c"}, {"Key": "tenant/a/users/a"}]},
        {"Bucket": "bucket", "Prefix": "tenant/a/users/", "ContinuationToken": "next"},
    )
    assert store.list("users/") == ["users/a", "users/b", "users/c"]


def test_a_store_without_prefix_uses_the_whole_bucket(client: Any, stub: Stubber) -> None:
    stub.add_response("put_object", {"ETag": '"e"'}, {"Bucket": "b2", "Key": "k", "Body": ANY})
    assert S3ObjectStore("b2", "", client).put("k", b"x") == '"e"'
    assert repr(S3ObjectStore("b2", "/p/q/", client)) == "S3ObjectStore(s3://b2/p/q/)"


class FailingClient:
    """A client whose every call fails below HTTP, as on a network error or timeout."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise self.error

        return fail


@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="http://127.0.0.1:9"),
        ReadTimeoutError(endpoint_url="http://127.0.0.1:9"),
    ],
    ids=["connection", "timeout"],
)
def test_network_failures_are_unavailability(error: Exception) -> None:
    store = S3ObjectStore("bucket", "", FailingClient(error))
    for call in (
        lambda: store.get("k"),
        lambda: store.put("k", b"x", if_match='"e"'),
        lambda: store.delete("k"),
        lambda: store.list(""),
        store.ping,
    ):
        with pytest.raises(StorageUnavailable, match=r"127\.0\.0\.1:9") as raised:
            call()
        assert raised.value.__cause__ is error


def test_put_bodies_are_sent_without_waiting_for_100_continue(client: Any) -> None:
    sent: list[dict[str, Any]] = []

    class Raw:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b""

    def capture(request: Any, **_: Any) -> AWSResponse:
        sent.append(dict(request.headers))
        return AWSResponse(request.url, 200, {"ETag": '"e"'}, Raw())

    client.meta.events.register("before-send.s3.PutObject", capture)
    assert S3ObjectStore("bucket", "", client).put("k", b"body") == '"e"'
    assert sent and not any(name.lower() == "expect" for name in sent[0])


def test_missing_boto3_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    monkeypatch.setitem(sys.modules, "botocore.exceptions", None)
    with pytest.raises(UnavailableError, match=r"oharness\[s3\]"):
        S3ObjectStore("bucket")
    with pytest.raises(UnavailableError, match=r"oharness\[s3\]"):
        s3_client_from_environment({})


def test_importing_the_adapter_does_not_import_boto3() -> None:
    code = (
        "import sys, oharness.storage.s3, oharness.storage.url; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')); "
        "print(loaded)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
