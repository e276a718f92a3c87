"""Every JSON example of docs/sync-protocol.md is valid against the JSON Schema the server
publishes for it (``/openapi.json``, generated from the protocol's declarations) and parses
with that declaration; a broken example would fail."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator
from starlette.testclient import TestClient
from sync_server_support import make_settings

from oharness.server.app import create_app
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.protocol import (
    Entitlements,
    convert,
    parse_commit_request,
    parse_commit_response,
    parse_erase_request,
    parse_error_response,
    parse_identity,
    parse_manifest,
    parse_snapshot_request,
    parse_snapshot_response,
)
from oharness.sync.protocol.admin import EraseResponse

DOC = Path(__file__).resolve().parents[3] / "docs" / "sync-protocol.md"
_BLOCK = re.compile(r"^```json ([a-z-]+)(?: (\d{3}))?\n(.*?)^```$", re.MULTILINE | re.DOTALL)

#: Example kind -> (route, method, "request" or the answer's status) in the OpenAPI document.
WHERE: dict[str, tuple[str, str, str]] = {
    "identity-response": ("/v1/memory/identity", "get", "200"),
    "commit-request": ("/v1/memory/commit", "post", "request"),
    "commit-response": ("/v1/memory/commit", "post", "200"),
    "snapshot-request": ("/v1/memory/snapshot", "post", "request"),
    "snapshot-response": ("/v1/memory/snapshot", "post", "200"),
    "erase-request": ("/v1/admin/erase", "post", "request"),
    "erase-response": ("/v1/admin/erase", "post", "200"),
}
PARSERS: dict[str, Any] = {
    "identity-response": parse_identity,
    "entitlements": lambda obj: convert(obj, Entitlements, "entitlements"),
    "commit-request": parse_commit_request,
    "commit-response": parse_commit_response,
    "snapshot-request": parse_snapshot_request,
    "snapshot-response": parse_snapshot_response,
    "error": parse_error_response,
    "erase-request": parse_erase_request,
    "erase-response": lambda obj: convert(obj, EraseResponse, "erase response"),
}


def examples() -> list[tuple[str, str | None, Any]]:
    found = []
    for match in _BLOCK.finditer(DOC.read_text(encoding="utf-8")):
        found.append((match.group(1), match.group(2), json.loads(match.group(3))))
    return found


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    app = create_app(MemoryObjectStore(), make_settings())
    loaded: dict[str, Any] = TestClient(app).get("/openapi.json").json()
    return loaded


def schema_of(document: dict[str, Any], kind: str, status: str | None) -> dict[str, Any]:
    """The published schema of an example, with the components its references point into."""
    if kind == "entitlements":  # a file the server reads, not an HTTP body
        found: dict[str, Any] = msgspec.json.schema(Entitlements)
        return found
    if kind == "error":
        path, method, part = "/v1/memory/commit", "post", status or "400"
    else:
        path, method, part = WHERE[kind]
    operation = document["paths"][path][method]
    holder = operation["requestBody"] if part == "request" else operation["responses"][part]
    schema = holder["content"]["application/json"]["schema"]
    return {**schema, "components": document["components"]}


def wire_examples() -> list[tuple[str, str | None, Any]]:
    # The manifest is what the server stores, not a message on the wire: it is checked by its
    # own parser (and by test_server_docs.py) only.
    return [item for item in examples() if item[0] != "manifest"]


def test_every_kind_of_example_is_checked() -> None:
    kinds = {kind for kind, _, _ in examples()}
    assert kinds == {*WHERE, "entitlements", "error", "manifest"}
    parse_manifest(json.dumps(next(b for k, _, b in examples() if k == "manifest")).encode())


@pytest.mark.parametrize(
    ("kind", "status", "body"), wire_examples(), ids=[k for k, _, _ in wire_examples()]
)
def test_example_is_valid_against_the_published_schema(
    document: dict[str, Any], kind: str, status: str | None, body: Any
) -> None:
    schema = schema_of(document, kind, status)
    errors = [error.message for error in Draft202012Validator(schema).iter_errors(body)]
    assert not errors, errors
    PARSERS[kind](body)


@pytest.mark.parametrize(
    ("kind", "status", "body"), wire_examples(), ids=[k for k, _, _ in wire_examples()]
)
def test_the_schema_would_refuse_a_broken_example(
    document: dict[str, Any], kind: str, status: str | None, body: Any
) -> None:
    validator = Draft202012Validator(schema_of(document, kind, status))
    assert not validator.is_valid([body])  # not an object
    for name in body:  # every field given a value of a type no field has
        if validator.is_valid({**body, name: [[None]]}):
            continue
        return
    pytest.fail(f"no field of the {kind} example is checked by its schema")
