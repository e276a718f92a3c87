"""docs/sync-protocol.md and the code agree: its JSON examples parse, its requests are accepted
by a real server in the order shown, and real responses have the documented shape."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from sync_server_support import ADMIN_KEY, FakeClock, auth, make_settings, token_for

from oharness.server.app import create_app
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.protocol import (
    ERROR_STATUS,
    PlanLimits,
    parse_commit_request,
    parse_commit_response,
    parse_entitlements,
    parse_error_response,
    parse_identity,
    parse_manifest,
    parse_snapshot_request,
    parse_snapshot_response,
    user_key_segment,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "sync-protocol.md"
_BLOCK = re.compile(r"^```json ([a-z-]+)(?: (\d{3}))?\n(.*?)^```$", re.MULTILINE | re.DOTALL)
#: Maps whose keys are data (revisions), not field names.
_DATA_MAPS = {"objects"}

PARSERS: dict[str, Callable[[Any], object]] = {
    "manifest": lambda obj: parse_manifest(json.dumps(obj).encode()),
    "identity-response": parse_identity,
    "entitlements": parse_entitlements,
    "commit-request": parse_commit_request,
    "commit-response": parse_commit_response,
    "snapshot-request": parse_snapshot_request,
    "snapshot-response": parse_snapshot_response,
    "error": parse_error_response,
    "erase-request": lambda obj: obj,
    "erase-response": lambda obj: obj,
}


def examples() -> list[tuple[str, int | None, Any]]:
    text = DOC.read_text(encoding="utf-8")
    found = []
    for match in _BLOCK.finditer(text):
        kind, status, body = match.group(1), match.group(2), match.group(3)
        found.append((kind, int(status) if status else None, json.loads(body)))
    return found


def shape(value: Any, key: str = "") -> Any:
    """The structure of a JSON value: key sets of objects, the first element of lists."""
    if isinstance(value, dict):
        if key in _DATA_MAPS:
            return "map"
        return {k: shape(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0], key)] if value else []
    return type(value).__name__ if value is not None else "null"


def same_shape(documented: Any, real: Any, where: str = "$") -> None:
    doc_shape, real_shape = shape(documented), shape(real)
    if isinstance(doc_shape, dict) and isinstance(real_shape, dict):
        assert set(doc_shape) == set(real_shape), f"{where}: {set(doc_shape) ^ set(real_shape)}"
        for k in doc_shape:
            if k not in _DATA_MAPS:
                same_shape(documented[k], real[k], f"{where}.{k}")
    elif isinstance(documented, list) and isinstance(real, list):
        if documented and real:
            same_shape(documented[0], real[0], f"{where}[0]")
    else:
        assert doc_shape == real_shape, f"{where}: documented {doc_shape}, real {real_shape}"


def test_every_example_is_valid_json_that_the_code_parses() -> None:
    found = examples()
    assert {kind for kind, _, _ in found} == set(PARSERS)
    for kind, status, body in found:
        PARSERS[kind](body)
        if kind == "error":
            assert status == ERROR_STATUS[body["error"]]


def test_documented_requests_work_and_responses_have_the_documented_shape() -> None:
    store = MemoryObjectStore()
    app = create_app(
        store, make_settings(free_plan_limits=PlanLimits(200, 16384)), clock=FakeClock()
    )
    client = TestClient(app)
    headers = auth(token_for("user-8f2a"))
    found = examples()
    responses = {kind: body for kind, _, body in reversed(found) if kind.endswith("-response")}
    snapshot_responses = [body for kind, _, body in found if kind == "snapshot-response"]
    errors = {status: body for kind, status, body in found if kind == "error"}

    identity = client.get("/v1/memory/identity", headers=headers)
    same_shape(responses["identity-response"], identity.json())

    snapshots = 0
    for kind, status, body in found:
        if kind == "commit-request":
            real = client.post("/v1/memory/commit", json=body, headers=headers)
            assert real.status_code == (status or 200), real.text
            same_shape(errors[status] if status else responses["commit-response"], real.json())
        elif kind == "snapshot-request":
            real = client.post("/v1/memory/snapshot", json=body, headers=headers)
            assert real.status_code == 200, real.text
            same_shape(snapshot_responses[snapshots], real.json())
            snapshots += 1
        elif kind == "erase-request":
            real = client.post("/v1/admin/erase", json=body, headers=auth(ADMIN_KEY))
            assert real.status_code == 200, real.text
            same_shape(responses["erase-response"], real.json())
            assert real.json()["deleted"] == responses["erase-response"]["deleted"]
    assert snapshots == len(snapshot_responses) == 3

    manifest = next(body for kind, _, body in found if kind == "manifest")
    assert manifest["version"] == 2  # the state the documented commits lead to


@pytest.mark.parametrize("status", [426, 429])
def test_documented_errors_match_real_ones(status: int) -> None:
    documented = next(body for kind, s, body in examples() if kind == "error" and s == status)
    overrides: dict[str, Any] = {"protocols": (1,)} if status == 426 else {"rate_per_minute": 1}
    client = TestClient(create_app(MemoryObjectStore(), make_settings(**overrides)))
    headers = auth(token_for("user-8f2a", plan="paid"))
    body = {"protocol": 2, "scope": {"kind": "user"}}
    real = client.post("/v1/memory/snapshot", json=body, headers=headers)
    if status == 429:
        real = client.post("/v1/memory/snapshot", json=body, headers=headers)
        assert real.headers["retry-after"]
    assert real.status_code == status
    same_shape(documented, real.json())
    if status == 426:
        assert real.json()["message"] == documented["message"]


def test_documented_key_segment_example() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert f"`{user_key_segment('alice@example.com')}`" in text


def test_the_error_table_matches_the_code() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d{3}) \| `([a-z_]+)` \|", text, re.MULTILINE)
    assert {(code, int(status)) for status, code in rows} == set(ERROR_STATUS.items())
