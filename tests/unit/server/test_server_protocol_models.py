"""The wire models of oharness.sync.protocol: parsing, serialising, key layout (spec 06)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from oharness.errors import ValidationError
from oharness.sync.protocol import (
    ERROR_STATUS,
    Change,
    CommitRequest,
    CommitResponse,
    Identity,
    Manifest,
    ManifestNote,
    ManifestTombstone,
    NoteEntry,
    PlanLimits,
    Quotas,
    RejectedEntry,
    SnapshotRequest,
    SnapshotResponse,
    SyncScope,
    TeamEntitlement,
    TombstoneEntry,
    manifest_key,
    manifest_to_bytes,
    object_key,
    parse_commit_request,
    parse_commit_response,
    parse_entitlements,
    parse_error_response,
    parse_identity,
    parse_manifest,
    parse_protocols,
    parse_scope,
    parse_snapshot_request,
    parse_snapshot_response,
    scope_prefix,
    team_erase_marker_key,
    team_feed_prefix,
    user_erase_marker_key,
    user_feed_prefix,
    user_key_segment,
)

REV = "0123456789abcdef0123456789abcdef"


def test_user_key_segment_keeps_safe_ids_and_hashes_the_rest() -> None:
    assert user_key_segment("alice_01-x") == "alice_01-x"
    assert user_key_segment("A" * 128) == "A" * 128
    email = "alice@example.com"
    assert user_key_segment(email) == "u-" + hashlib.sha256(email.encode()).hexdigest()[:32]
    for unsafe in ("A" * 129, "../x", "a/b", "a.b", "", "é"):
        segment = user_key_segment(unsafe)
        assert segment.startswith("u-") and len(segment) == 34


def test_scope_prefixes_and_keys() -> None:
    project = SyncScope("project", "git-5f0c")
    assert scope_prefix("alice", project) == "users/alice/projects/git-5f0c/memory/"
    assert scope_prefix("alice", SyncScope("user")) == "users/alice/memory/"
    prefix = scope_prefix("alice", SyncScope("user"))
    assert manifest_key(prefix) == "users/alice/memory/manifest.json"
    assert object_key(prefix, "n-1", REV) == f"users/alice/memory/objects/n-1/{REV}.md"
    assert user_erase_marker_key("alice") == "erased/users/alice.json"
    assert team_erase_marker_key("t1") == "erased/teams/t1.json"
    assert user_feed_prefix("alice") == "feed/alice/"
    assert team_feed_prefix("t1") == "feed/team-t1/"


@pytest.mark.parametrize("bad", ["../x", "a/b", "a.b", "", ".x", "x" * 129, "-x", "a b"])
def test_keys_cannot_escape_their_prefix(bad: str) -> None:
    with pytest.raises(ValidationError):
        parse_scope({"kind": "project", "projectId": bad})
    with pytest.raises(ValidationError):
        object_key("users/alice/memory/", bad, REV)
    with pytest.raises(ValidationError):
        scope_prefix("alice", SyncScope("project", bad))


def test_object_key_needs_a_revision() -> None:
    with pytest.raises(ValidationError):
        object_key("users/a/memory/", "n-1", "../../x")


@pytest.mark.parametrize(
    "scope",
    [None, [], {"kind": "team"}, {"kind": "project"}, {"kind": "project", "projectId": 3}],
)
def test_bad_scopes_are_refused(scope: object) -> None:
    with pytest.raises(ValidationError, match="scope"):
        parse_scope(scope)


def test_snapshot_request_round_trip() -> None:
    request = SnapshotRequest(
        scope=SyncScope("project", "git-1"), since=16, have=frozenset({"sha256:a"}), want=(REV,)
    )
    assert parse_snapshot_request(request.to_json()) == request
    minimal = parse_snapshot_request({"protocol": 1, "scope": {"kind": "user"}})
    assert minimal.since is None and minimal.have == frozenset() and minimal.protocol == 1


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"scope": {"kind": "user"}},
        {"protocol": "2", "scope": {"kind": "user"}},
        {"protocol": True, "scope": {"kind": "user"}},
        {"protocol": 2, "scope": {"kind": "user"}, "since": -1},
        {"protocol": 2, "scope": {"kind": "user"}, "since": "3"},
        {"protocol": 2, "scope": {"kind": "user"}, "have": "sha256:x"},
        {"protocol": 2, "scope": {"kind": "user"}, "want": [1]},
    ],
)
def test_malformed_snapshot_requests_name_the_problem(body: Any) -> None:
    with pytest.raises(ValidationError):
        parse_snapshot_request(body)


def test_commit_request_round_trip_and_per_change_problems() -> None:
    request = CommitRequest(
        scope=SyncScope("user"),
        base_version=17,
        atomic=True,
        changes=(Change("put", "a-1", None, "text"), Change("delete", "b-2", REV)),
    )
    assert parse_commit_request(request.to_json()) == request
    parsed = parse_commit_request(
        {
            "protocol": 2,
            "scope": {"kind": "user"},
            "changes": [
                {"op": "move", "id": "a"},
                {"op": "put", "id": "b", "baseRev": 3, "content": "x"},
                {"op": "put", "id": "c", "baseRev": None},
                {"op": "delete", "id": "d", "baseRev": None},
            ],
        }
    )
    problems = [change.problem for change in parsed.changes]
    assert all(problems), problems
    assert "op" in str(problems[0]) and "content" in str(problems[2])


@pytest.mark.parametrize(
    "body",
    [
        {"protocol": 2, "scope": {"kind": "user"}},
        {"protocol": 2, "scope": {"kind": "user"}, "changes": {}},
        {"protocol": 2, "scope": {"kind": "user"}, "changes": [3]},
        {"protocol": 2, "scope": {"kind": "user"}, "changes": [{"op": "put"}]},
        {"protocol": 2, "scope": {"kind": "user"}, "changes": [], "atomic": "yes"},
        {"protocol": 2, "scope": {"kind": "user"}, "changes": [], "atomic": True},
    ],
)
def test_request_level_commit_problems_raise(body: Any) -> None:
    with pytest.raises(ValidationError):
        parse_commit_request(body)


def test_responses_round_trip() -> None:
    quotas = Quotas()
    snapshot = SnapshotResponse(
        version=3,
        plan="paid",
        quotas=quotas,
        full=True,
        notes=(NoteEntry("a-1", REV, "sha256:x", 10, True, 5),),
        tombstones=(TombstoneEntry("b-2", REV, 6),),
        objects={REV: "text"},
        pending=("f" * 32,),
    )
    assert parse_snapshot_response(snapshot.to_json()) == snapshot
    unchanged = SnapshotResponse(version=3, plan="free", quotas=quotas, unchanged=True)
    assert set(unchanged.to_json()) == {"version", "unchanged", "quotas", "plan"}
    assert parse_snapshot_response(unchanged.to_json()) == unchanged
    commit = CommitResponse(
        version=4,
        plan="free",
        quotas=quotas,
        rejected=(
            RejectedEntry("a-1", "conflict", "changed", REV),
            RejectedEntry("b-2", "too_large", "big"),
        ),
    )
    wire = commit.to_json()
    assert "currentRev" in wire["rejected"][0] and "currentRev" not in wire["rejected"][1]
    assert parse_commit_response(wire) == commit
    identity = Identity(
        "alice", "paid", (TeamEntitlement("t1", "paid"),), (1, 2), quotas, PlanLimits(200, 16384)
    )
    assert parse_identity(identity.to_json()) == identity


def test_protocol_1_listings_have_no_typed_field() -> None:
    entry = NoteEntry("a-1", REV, "sha256:x", 10, False, 5)
    assert "typed" not in entry.to_json(protocol=1)
    assert entry.to_json(protocol=2)["typed"] is False


def test_error_table_and_error_bodies() -> None:
    assert ERROR_STATUS == {
        "invalid_request": 400,
        "unauthorized": 401,
        "account_erased": 403,
        "plan_limit": 403,
        "conflict": 409,
        "encrypted_account": 409,
        "manifest_changed": 412,
        "too_large": 413,
        "quota_exceeded": 422,
        "protocol_unsupported": 426,
        "rate_limited": 429,
        "unavailable": 503,
    }
    body = {
        "error": "protocol_unsupported",
        "message": "m",
        "protocols": [1],
        "quotas": Quotas().to_json(),
        "plan": "free",
    }
    parsed = parse_error_response(body)
    assert parsed.status == 426 and parsed.details == {"protocols": [1]}
    assert parsed.to_json() == body


def test_manifest_round_trip_and_format_1() -> None:
    manifest = Manifest(
        version=17,
        updated_at=1,
        gc_version=3,
        notes={"a-1": ManifestNote(REV, "sha256:x", 412, True, 2, 15)},
        tombstones={"b-2": ManifestTombstone(REV, 3, 16)},
    )
    data = manifest_to_bytes(manifest)
    assert parse_manifest(data) == manifest
    assert b'"format":2' in data
    old = b'{"format":1,"version":2,"updatedAt":1,"gcVersion":0,"notes":{"a":{"rev":"r",'
    old += b'"hash":"h","size":1,"changedAt":1,"v":2}},"tombstones":{}}'
    assert parse_manifest(old).notes["a"].typed is False


@pytest.mark.parametrize("data", [b"", b"[]", b"\xff", b'{"format": 3, "version": 1}'])
def test_unreadable_manifests_raise(data: bytes) -> None:
    with pytest.raises(ValidationError):
        parse_manifest(data)


def test_protocol_lists_and_entitlements() -> None:
    assert parse_protocols("1") == (1,)
    assert parse_protocols("2, 1,2") == (1, 2)
    for bad in ("", "3", "1,x"):
        with pytest.raises(ValidationError):
            parse_protocols(bad)
    assert parse_entitlements({"free": {"maxNotes": 200, "maxBodyBytes": 16384}}) == PlanLimits(
        200, 16384
    )
    assert parse_entitlements({}) is None
    with pytest.raises(ValidationError):
        parse_entitlements({"free": {"maxNotes": "many"}})
