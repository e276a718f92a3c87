"""Schemathesis against the live sync server on loopback: cases generated from the server's
own OpenAPI document (valid and invalid bodies, every route and method) must never get a 500,
and every answer must carry a status the document declares for that operation, with the
declared content type, headers and body schema; requests without the token, or with a method
a route does not take, must be refused.

Bounded for the test command: a few dozen cases per operation (``OHARNESS_FUZZ_EXAMPLES``
raises it for a longer run by hand)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks
from schemathesis.core.result import Err
from sync_server_support import ADMIN_KEY, LiveServer, live_server, make_settings, token_for

from oharness.storage.file import FileObjectStore

EXAMPLES = int(os.environ.get("OHARNESS_FUZZ_EXAMPLES", "20"))
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
    checks.ignored_auth,
    checks.missing_required_header,
    checks.unsupported_method,
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    store = FileObjectStore(Path(tmp_path_factory.mktemp("fuzz-storage")))
    with live_server(store, make_settings()) as running:
        yield running


def _operations(url: str) -> list[schemathesis.APIOperation]:
    loaded = schemathesis.openapi.from_url(url + "/openapi.json")
    operations = []
    for result in loaded.get_all_operations():
        if isinstance(result, Err):  # an operation the schema cannot describe fails the test
            raise result.err()
        operations.append(result.ok())
    return operations


def test_no_server_error_and_only_declared_statuses(server: LiveServer) -> None:
    operations = _operations(server.url)
    assert {op.path for op in operations} >= {"/v1/memory/commit", "/v1/memory/snapshot"}
    user_token = token_for("fuzz-user")
    for operation in operations:
        admin = operation.path.startswith("/v1/admin/")
        _fuzz(operation, server.url, ADMIN_KEY if admin else user_token)


def _fuzz(operation: schemathesis.APIOperation, url: str, token: str) -> None:
    """Generated cases of one operation against the live server."""

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    @given(case=operation.as_strategy())
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(
            base_url=url,
            headers={"Authorization": f"Bearer {token}"},
            checks=CHECKS,
        )

    check()


def test_the_document_declares_the_error_responses(server: LiveServer) -> None:
    with server.client() as client:
        document = client.get("/openapi.json").json()
    commit = document["paths"]["/v1/memory/commit"]["post"]
    assert {"400", "401", "413", "426", "429", "503"} <= set(commit["responses"])
    scope_rule = commit["requestBody"]["content"]["application/json"]["schema"]
    assert scope_rule["if"]["properties"]["protocol"] == {"const": 1}
    with server.client() as client:
        answer = client.get("/v1/memory/commit")
    assert answer.status_code == 405 and answer.headers["Allow"] == "POST"
