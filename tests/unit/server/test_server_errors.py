"""Every row of the error table (spec 06.6), in process: status, code, body shape, headers."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from sync_server_support import (
    ADMIN_KEY,
    Api,
    FakeMonotonic,
    MakeApi,
    auth,
    commit_body,
    delete,
    note_text,
    put,
    rev_of,
    snapshot_body,
    token_for,
)

from oharness.storage.in_memory import MemoryObjectStore, fail_on
from oharness.sync.protocol import PlanLimits, Quotas

QUOTA_KEYS = {
    "maxRequestBytes",
    "maxNotes",
    "maxChangesPerCommit",
    "maxBodyBytes",
    "maxResponseBytes",
    "tombstoneDays",
}


def assert_error(
    response: httpx2.Response, status: int, code: str, *, extra: set[str] | None = None
) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "message", "quotas", "plan"} | (extra or set()), body
    assert body["error"] == code
    assert isinstance(body["message"], str) and len(body["message"]) > 10
    assert set(body["quotas"]) == QUOTA_KEYS
    assert body["plan"] in ("free", "paid")
    assert response.headers["content-type"] == "application/json"
    return body


def post(api: Api, path: str, **kwargs: Any) -> httpx2.Response:
    return api.client.post(path, headers={**auth(api.token), **kwargs.pop("headers", {})}, **kwargs)


# ------------------------------------------------------------------------------ 400


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe",
        b"[]",
        b'"text"',
        b"{}",
        b'{"protocol": "2", "scope": {"kind": "user"}}',
        b'{"protocol": 2}',
        b'{"protocol": 2, "scope": {"kind": "team"}}',
        b'{"protocol": 2, "scope": {"kind": "project", "projectId": "../bob"}}',
        b'{"protocol": 2, "scope": {"kind": "project", "projectId": "a/b"}}',
        b'{"protocol": 2, "scope": {"kind": "user"}, "since": "yesterday"}',
        b'{"protocol": 1, "scope": {"kind": "user"}}',
        b"[" * 100_000,
    ],
)
def test_400_invalid_request_for_malformed_snapshots(api: Api, content: bytes) -> None:
    response = post(api, "/v1/memory/snapshot", content=content)
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    "body",
    [
        {"protocol": 2, "scope": {"kind": "user"}},
        {"protocol": 2, "scope": {"kind": "user"}, "changes": "all"},
        {"protocol": 2, "scope": {"kind": "user"}, "changes": [None]},
        {"protocol": 2, "scope": {"kind": "user"}, "changes": [], "atomic": True},
        {"protocol": 1, "scope": {"kind": "user"}, "changes": []},
    ],
)
def test_400_invalid_request_for_malformed_commits(api: Api, body: dict[str, Any]) -> None:
    assert_error(post(api, "/v1/memory/commit", json=body), 400, "invalid_request")


def test_per_note_problems_are_not_request_errors(api: Api) -> None:
    data = api.ok_commit([{"op": "put", "id": "a-1", "baseRev": None}, put("b-1", "junk")])
    assert [r["reason"] for r in data["rejected"]] == ["invalid_request", "invalid_request"]


# ------------------------------------------------------------------------------ 401


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic YWxpY2U6cHc="},
        auth("not.a.token"),
        auth(token_for("alice", expires_in=-60)),
        auth(token_for("alice", secret="wrong-secret-0123456789abcdef0123456789")),
    ],
)
def test_401_unauthorized(api: Api, headers: dict[str, str]) -> None:
    for response in (
        api.client.get("/v1/memory/identity", headers=headers),
        api.client.post("/v1/memory/snapshot", json=snapshot_body(), headers=headers),
        api.client.post("/v1/memory/commit", json=commit_body([]), headers=headers),
    ):
        body = assert_error(response, 401, "unauthorized")
        assert body["plan"] == "free"
        assert response.headers["www-authenticate"] == "Bearer"


# ------------------------------------------------------------------------------ 403


def test_403_account_erased_even_with_a_valid_token(api: Api) -> None:
    api.ok_commit([put("a-1", note_text("a-1"))])
    erased = api.client.post("/v1/admin/erase", json={"userId": "alice"}, headers=auth(ADMIN_KEY))
    assert erased.status_code == 200, erased.text
    assert_error(api.identity(), 403, "account_erased")
    assert_error(api.snapshot(), 403, "account_erased")
    assert_error(api.commit([put("b-1", note_text("b-1"))]), 403, "account_erased")


def test_403_plan_limit_for_atomic_commits(make_api: MakeApi) -> None:
    api = make_api(free_plan_limits=PlanLimits(max_notes=1, max_body_bytes=50))
    body = assert_error(
        api.commit([put("a-1", note_text("a-1", "x" * 60))], atomic=True, base_version=0),
        403,
        "plan_limit",
    )
    assert "a-1" in body["message"]
    api.ok_commit([put("a-1", note_text("a-1"))], atomic=True, base_version=0)
    assert_error(
        api.commit([put("b-1", note_text("b-1"))], atomic=True, base_version=1),
        403,
        "plan_limit",
    )
    # non-atomic: per note, the rest applies
    data = api.ok_commit([put("b-1", note_text("b-1"))])
    assert data["rejected"][0]["reason"] == "plan_limit"
    # a paid account has no plan limits
    paid = api.as_user(token_for("alice", plan="paid"))
    assert paid.ok_commit([put("b-1", note_text("b-1"))])["applied"]


# ------------------------------------------------------------------------------ 409, 412


def test_409_conflict_applies_nothing(api: Api) -> None:
    text = note_text("a-1")
    api.ok_commit([put("a-1", text)])
    response = api.commit(
        [put("b-1", note_text("b-1")), put("a-1", note_text("a-1", "mine\n"), "f" * 32)],
        atomic=True,
        base_version=1,
    )
    body = assert_error(response, 409, "conflict", extra={"conflicts"})
    assert body["conflicts"] == [
        {
            "id": "a-1",
            "reason": "conflict",
            "message": "the note changed on the server since this device synced it",
            "currentRev": rev_of(text),
        }
    ]
    assert api.ok_snapshot(since=1)["unchanged"] is True


def test_412_manifest_changed(api: Api) -> None:
    api.ok_commit([put("a-1", note_text("a-1"))])
    body = assert_error(
        api.commit([put("b-1", note_text("b-1"))], atomic=True, base_version=0),
        412,
        "manifest_changed",
        extra={"version"},
    )
    assert body["version"] == 1


def test_an_atomic_retry_after_a_lost_answer_succeeds(api: Api) -> None:
    changes = [put("a-1", note_text("a-1")), put("b-1", note_text("b-1"))]
    first = api.ok_commit(changes, atomic=True, base_version=0)
    again = api.ok_commit(changes, atomic=True, base_version=0)
    assert first["version"] == again["version"] == 1
    assert again["applied"] == first["applied"]


# ------------------------------------------------------------------------------ 413


def test_413_too_many_changes(make_api: MakeApi) -> None:
    api = make_api(quotas=Quotas(max_changes_per_commit=2))
    changes = [put(f"n-{i}", note_text(f"n-{i}")) for i in range(3)]
    assert_error(api.commit(changes), 413, "too_large")
    assert api.ok_commit(changes[:2])["version"] == 1


def test_413_request_over_the_size_limit(make_api: MakeApi) -> None:
    api = make_api(max_request_bytes=4096)
    big = [put("a-1", note_text("a-1", "x" * 5000))]
    assert_error(api.commit(big), 413, "too_large")

    def chunks() -> Any:  # no Content-Length: the cap applies while reading
        yield b'{"protocol": 2, "scope": {"kind": "user"}, "changes": ['
        for _ in range(100):
            yield b'{"op": "delete", "id": "a", "baseRev": "' + b"f" * 32 + b'"},'
        yield b"]}"

    response = post(api, "/v1/memory/commit", content=chunks())
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "too_large")
    lying = post(api, "/v1/memory/commit", content=b"x" * 5000, headers={"content-length": "10"})
    assert lying.status_code in (400, 413)


def test_413_atomic_body_over_the_limit(make_api: MakeApi) -> None:
    api = make_api(quotas=Quotas(max_body_bytes=100))
    big = put("a-1", note_text("a-1", "x" * 200))
    assert_error(api.commit([big], atomic=True, base_version=0), 413, "too_large")
    assert api.ok_commit([big])["rejected"][0]["reason"] == "too_large"


# ------------------------------------------------------------------------------ 422, 426


def test_422_quota_exceeded(make_api: MakeApi) -> None:
    api = make_api(quotas=Quotas(max_notes=1))
    api.ok_commit([put("a-1", note_text("a-1"))])
    assert_error(
        api.commit([put("b-1", note_text("b-1"))], atomic=True, base_version=1),
        422,
        "quota_exceeded",
    )
    assert api.ok_commit([put("b-1", note_text("b-1"))])["rejected"][0]["reason"] == (
        "quota_exceeded"
    )
    # a user above a lowered quota can always delete
    data = api.ok_commit([delete("a-1", rev_of(note_text("a-1")))])
    assert data["applied"][0]["op"] == "delete"


def test_426_protocol_unsupported(make_api: MakeApi) -> None:
    api = make_api()
    body = assert_error(api.snapshot(protocol=3), 426, "protocol_unsupported", extra={"protocols"})
    assert body["protocols"] == [1, 2] and "upgrade the server" in body["message"]
    old = make_api(protocols=(1,))
    assert old.identity().json()["protocols"] == [1]
    body = assert_error(old.snapshot(), 426, "protocol_unsupported", extra={"protocols"})
    assert body["protocols"] == [1]
    assert_error(old.commit([]), 426, "protocol_unsupported", extra={"protocols"})
    assert old.ok_snapshot(protocol=1)["version"] == 0


# ------------------------------------------------------------------------------ 429, 503


def test_429_rate_limited_with_retry_after(make_api: MakeApi, monotonic: FakeMonotonic) -> None:
    api = make_api(rate_per_minute=3)
    for _ in range(3):
        assert api.identity().status_code == 200
    response = api.snapshot()
    assert_error(response, 429, "rate_limited")
    assert response.headers["retry-after"] == "20"
    other = api.as_user(token_for("bob"))
    assert other.identity().status_code == 200
    monotonic.now += 20
    assert api.identity().status_code == 200


def test_503_unavailable_with_retry_after(make_api: MakeApi) -> None:
    broken = MemoryObjectStore(before=fail_on("get", times=100))
    api = make_api(on_store=broken)
    for response in (api.identity(), api.snapshot(), api.commit([])):
        assert_error(response, 503, "unavailable")
        assert int(response.headers["retry-after"]) > 0
    health = api.client.get("/healthz")
    assert health.status_code == 200
    down = make_api(on_store=MemoryObjectStore(before=fail_on("ping")))
    response = down.client.get("/healthz")
    assert_error(response, 503, "unavailable")
    assert "retry-after" in response.headers


def test_503_when_contention_does_not_let_up(make_api: MakeApi) -> None:
    store = MemoryObjectStore()
    other: list[Api] = []

    def racer(op: str, key: str) -> None:
        # Another writer replaces the manifest just before each of our conditional writes.
        if op == "put" and key.endswith("manifest.json") and other and not racing:
            racing.append(True)
            try:
                other[0].ok_commit([put(f"r-{len(stamps)}", note_text(f"r-{len(stamps)}"))])
                stamps.append(1)
            finally:
                racing.pop()

    racing: list[bool] = []
    stamps: list[int] = []
    store.before = racer  # type: ignore[assignment]
    api = make_api(on_store=store, commit_attempts=3)
    other.append(make_api(on_store=store, user="alice"))
    response = api.commit([put("a-1", note_text("a-1"))])
    assert_error(response, 503, "unavailable")
    assert "retry" in response.json()["message"]
    assert len(stamps) == 3


# ------------------------------------------------------------------------------ others


def test_unknown_routes_and_methods_answer_json(api: Api) -> None:
    assert_error(api.client.get("/v1/nothing"), 404, "not_found")
    assert_error(api.client.get("/v1/memory/commit"), 405, "method_not_allowed")


def test_admin_route_is_absent_without_a_key(make_api: MakeApi) -> None:
    api = make_api(admin_key=None)
    response = api.client.post("/v1/admin/erase", json={"userId": "a"}, headers=auth("x"))
    assert_error(response, 404, "not_found")


def test_admin_erase_refuses_wrong_keys_and_bodies(api: Api) -> None:
    for headers in ({}, auth("wrong"), auth(ADMIN_KEY + "x"), {"Authorization": ADMIN_KEY}):
        response = api.client.post("/v1/admin/erase", json={"userId": "a"}, headers=headers)
        assert_error(response, 401, "unauthorized")
    body: Any
    for body in ({}, {"userId": ""}, {"userId": "a", "teamId": "b"}, {"userId": 3}, []):
        response = api.client.post("/v1/admin/erase", json=body, headers=auth(ADMIN_KEY))
        assert_error(response, 400, "invalid_request")


def test_every_unsafe_route_refuses_a_request_without_credentials(api: Api) -> None:
    """Walked from the published OpenAPI document, so a route added later is covered too:
    no state-changing request is served to a caller who shows no credentials."""
    document = api.client.get("/openapi.json").json()
    unsafe = [
        (method, path)
        for path, operations in document["paths"].items()
        for method in operations
        if method in ("post", "put", "patch", "delete")
    ]
    assert ("post", "/v1/memory/commit") in unsafe and ("post", "/v1/admin/erase") in unsafe
    for method, path in unsafe:
        response = api.client.request(method.upper(), path, json={})
        assert_error(response, 401, "unauthorized")
