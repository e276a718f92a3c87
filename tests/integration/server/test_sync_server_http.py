"""The sync server through real HTTP on loopback (uvicorn in a thread, httpx2 clients)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from sync_server_support import (
    SECRET,
    Api,
    LiveServer,
    auth,
    commit_body,
    live_server,
    make_settings,
    note_text,
    put,
    rev_of,
    snapshot_body,
    token_for,
)

from oharness.server.config import JwtSettings
from oharness.storage.file import FileObjectStore
from oharness.storage.in_memory import MemoryObjectStore, fail_on


@pytest.fixture
def storage_root(tmp_path: Path) -> Path:
    return tmp_path / "storage"


@pytest.fixture
def server(storage_root: Path) -> Iterator[LiveServer]:
    with live_server(FileObjectStore(storage_root), make_settings(rate_per_minute=1000)) as live:
        yield live


@pytest.fixture
def api(server: LiveServer) -> Iterator[Api]:
    with server.client() as client:
        yield Api(client, token_for("alice"))


def test_a_full_round_trip_over_http(api: Api, storage_root: Path) -> None:
    identity = api.identity()
    assert identity.status_code == 200 and identity.json()["userId"] == "alice"
    a = note_text("a-1", "Über café — 日本語\n")
    data = api.ok_commit([put("a-1", a)])
    assert data["version"] == 1
    snap = api.ok_snapshot()
    assert snap["objects"] == {rev_of(a): a}
    assert api.ok_snapshot(since=1)["unchanged"] is True
    stored = storage_root / "users/alice/projects/git-abc/memory/objects/a-1" / f"{rev_of(a)}.md"
    assert stored.read_bytes() == a.encode()
    manifest = json.loads((stored.parents[2] / "manifest.json").read_text())
    assert manifest["format"] == 2 and manifest["version"] == 1


def test_healthz_over_http(server: LiveServer) -> None:
    with server.client() as client:
        response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"
    assert response.headers["x-request-id"]


def forge_hs256(payload: dict[str, Any], secret: bytes) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(b'{"alg":"HS256","typ":"JWT"}') + "." + b64(json.dumps(payload).encode())
    signature = hmac.new(secret, head.encode(), hashlib.sha256).digest()
    return head + "." + b64(signature)


def alg_none(payload: dict[str, Any]) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    return b64(b'{"alg":"none","typ":"JWT"}') + "." + b64(json.dumps(payload).encode()) + "."


def test_attack_tokens_over_http(api: Api) -> None:
    claims = {"sub": "alice", "exp": int(time.time()) + 600}
    attacks = [
        token_for("alice", expires_in=-120),  # past the 30 s clock-skew leeway
        alg_none(claims),
        token_for("alice", secret="not-the-secret-0123456789abcdef01234567"),
        jwt.encode(claims, rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256"),
    ]
    for token in attacks:
        for response in (api.as_user(token).identity(), api.as_user(token).snapshot()):
            assert response.status_code == 401, token
            assert response.json()["error"] == "unauthorized"


UNSAFE = ("POST", "PUT", "PATCH", "DELETE")


def test_every_unsafe_method_without_credentials_is_refused_and_changes_nothing(
    server: LiveServer, storage_root: Path
) -> None:
    from oharness.server.routes import operations

    bodies = {
        "/v1/memory/commit": commit_body([put("a-1", note_text("a-1"))]),
        "/v1/memory/snapshot": snapshot_body(),
        "/v1/admin/erase": {"userId": "alice"},
    }
    expired = token_for("alice", expires_in=-120)
    text_exp = jwt.encode({"sub": "alice", "exp": str(int(time.time()) + 600)}, SECRET, "HS256")
    credentials: list[dict[str, str]] = [
        {},
        {"Authorization": "Bearer"},
        auth(expired),
        auth(text_exp),  # a string exp: refused, not coerced
        {"Authorization": f"Basic {token_for('alice')}"},
    ]
    served: dict[str, set[str]] = {}
    for op in operations(admin=True):
        served.setdefault(op.path, set()).add(op.method)
    with server.client() as client:
        for op in operations(admin=True):
            for method in UNSAFE:
                for headers in credentials:
                    answer = client.request(
                        method, op.path, json=bodies.get(op.path, {}), headers=headers
                    )
                    # A method the path serves (the key envelope: GET and PUT) asks for
                    # credentials first; any other is 405 (/healthz: GET only).
                    expected = 401 if method in served[op.path] else 405
                    assert answer.status_code == expected, (method, op.path, headers)
        user = auth(token_for("alice"))  # a user's token is not the admin key
        assert (
            client.post("/v1/admin/erase", json=bodies["/v1/admin/erase"], headers=user).status_code
            == 401
        )
        snapshot = client.post("/v1/memory/snapshot", json=snapshot_body(), headers=user)
        assert snapshot.status_code == 200 and snapshot.json()["objects"] == {}
    assert not [
        p for p in storage_root.rglob("*") if p.is_file() and "a-1" in p.read_text(errors="replace")
    ]


def test_hs_rs_confusion_against_a_public_key_server(storage_root: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    settings = make_settings(jwt=JwtSettings(public_key_pem=public.decode()))
    claims = {"sub": "alice", "exp": int(time.time()) + 600}
    with live_server(FileObjectStore(storage_root), settings) as live, live.client() as client:
        good = jwt.encode(claims, key, algorithm="RS256")
        assert client.get("/v1/memory/identity", headers=auth(good)).status_code == 200
        for token in (forge_hs256(claims, public), alg_none(claims), token_for("alice")):
            response = client.get("/v1/memory/identity", headers=auth(token))
            assert response.status_code == 401


def test_eddsa_server(storage_root: Path) -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    settings = make_settings(jwt=JwtSettings(public_key_pem=public.decode()))
    token = jwt.encode({"sub": "bob", "exp": int(time.time()) + 60}, key, algorithm="EdDSA")
    with live_server(FileObjectStore(storage_root), settings) as live, live.client() as client:
        response = client.get("/v1/memory/identity", headers=auth(token))
        assert response.status_code == 200 and response.json()["userId"] == "bob"


def test_another_users_project_id_stays_in_the_callers_prefix(api: Api, storage_root: Path) -> None:
    api.ok_commit([put("plan-1", note_text("plan-1", "alice's plan\n"))])
    mallory = api.as_user(token_for("mallory"))
    assert mallory.ok_snapshot()["notes"] == []
    rev = rev_of(note_text("plan-1", "alice's plan\n"))
    assert mallory.ok_snapshot(want=[rev])["objects"] == {}
    mallory.ok_commit([put("plan-1", note_text("plan-1", "overwritten\n"))])
    assert api.ok_snapshot()["objects"] == {rev: note_text("plan-1", "alice's plan\n")}
    for hostile in ("../alice", "..", "git-abc/../../alice", "%2e%2e"):
        response = mallory.snapshot(scope={"kind": "project", "projectId": hostile})
        assert response.status_code == 400
    users = sorted(path.name for path in (storage_root / "users").iterdir())
    assert users == ["alice", "mallory"]


def test_oversize_and_malformed_bodies_over_http(storage_root: Path) -> None:
    settings = make_settings(max_request_bytes=64 * 1024)
    with live_server(FileObjectStore(storage_root), settings) as live, live.client() as client:
        headers = auth(token_for("alice"))
        huge = {"protocol": 2, "scope": {"kind": "user"}, "changes": [], "pad": "x" * 100_000}
        response = client.post("/v1/memory/commit", json=huge, headers=headers)
        assert response.status_code == 413 and response.json()["error"] == "too_large"

        def stream() -> Iterator[bytes]:
            yield b'{"protocol": 2, "scope": {"kind": "user"}, "changes": [], "pad": "'
            for _ in range(200):
                yield b"y" * 1024
            yield b'"}'

        response = client.post("/v1/memory/commit", content=stream(), headers=headers)
        assert response.status_code == 413
        for content in (b"{", b"\x00\x01", b"null", b'{"protocol": 2}'):
            response = client.post("/v1/memory/snapshot", content=content, headers=headers)
            assert response.status_code == 400 and response.json()["error"] == "invalid_request"
        assert client.get("/healthz").status_code == 200  # still serving


def test_storage_fault_mid_commit_over_http() -> None:
    store = MemoryObjectStore(before=fail_on("put", key_endswith="/manifest.json"))
    with live_server(store, make_settings()) as live, live.client() as client:
        api = Api(client, token_for("alice"))
        changes = [put("a-1", note_text("a-1")), put("b-1", note_text("b-1"))]
        failed = api.commit(changes)
        assert failed.status_code == 503 and failed.json()["error"] == "unavailable"
        assert int(failed.headers["retry-after"]) > 0
        assert api.ok_snapshot()["version"] == 0  # no torn manifest
        retried = api.ok_commit(changes)
        assert retried["version"] == 1 and len(retried["applied"]) == 2


def test_rate_limit_over_http(storage_root: Path) -> None:
    with (
        live_server(FileObjectStore(storage_root), make_settings(rate_per_minute=2)) as live,
        live.client() as client,
    ):
        api = Api(client, token_for("alice"))
        assert api.identity().status_code == 200
        assert api.identity().status_code == 200
        limited = api.identity()
        assert limited.status_code == 429 and limited.headers["retry-after"] == "30"


def test_http_errors_are_json(server: LiveServer) -> None:
    with httpx2.Client(base_url=server.url) as client:
        response = client.get("/nothing-here")
    assert response.status_code == 404 and response.json()["error"] == "not_found"
    assert "quotas" in response.json()


def test_secret_is_long_enough() -> None:
    assert len(SECRET) >= 32
