"""Every message kind's wire form is the one the hand-written models of release 0.1 sent
(``tests/data/sync_wire/release_0_1.json``, written by that code from these same instances):
field for field, null kept or left out exactly as before, and each parses back to itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from oharness.errors import ValidationError
from oharness.sync.protocol import (
    AppliedEntry,
    Change,
    CommitRequest,
    CommitResponse,
    Identity,
    NoteEntry,
    PlanLimits,
    Quotas,
    RejectedEntry,
    SnapshotRequest,
    SnapshotResponse,
    SyncScope,
    TeamEntitlement,
    TombstoneEntry,
    Wire,
    error_from_details,
    parse_commit_request,
    parse_commit_response,
    parse_erase_request,
    parse_error_response,
    parse_identity,
    parse_plan_limits,
    parse_quotas,
    parse_scope,
    parse_snapshot_request,
    parse_snapshot_response,
)

RELEASE_0_1 = Path(__file__).resolve().parents[2] / "data" / "sync_wire" / "release_0_1.json"
REV = "0123456789abcdef0123456789abcdef"
R2 = "fedcba9876543210fedcba9876543210"
Q = Quotas()
Q2 = Quotas(
    max_notes=50,
    max_changes_per_commit=20,
    max_body_bytes=1000,
    max_response_bytes=9000,
    tombstone_days=7,
    max_request_bytes=4096,
)
NOTE = NoteEntry("a-1", REV, "sha256:x", 10, True, 5)
UNTYPED = NoteEntry("b-1", R2, "sha256:y", 0, False, 0)
TOMB = TombstoneEntry("c-1", REV, 6)
FULL = SnapshotResponse(
    4,
    "paid",
    Q,
    full=True,
    notes=(NOTE, UNTYPED),
    tombstones=(TOMB,),
    objects={REV: "x", R2: "y\n"},
    pending=(),
    generation="g",
    commit="c",
)
REJECTED = (
    RejectedEntry("c-1", "conflict", "changed", REV),
    RejectedEntry("d-1", "conflict", "gone"),
    RejectedEntry("e-1", "too_large", "big"),
    RejectedEntry("f-1", "plan_limit", "free plan", REV),
)
CONFLICTS = [{"id": "a-1", "reason": "conflict", "message": "m", "currentRev": None}]

CASES: dict[str, Wire] = {
    "quotas": Q,
    "quotas-announced": Q2,
    "plan-limits": PlanLimits(200, 16384),
    "plan-limits-none": PlanLimits(None, None),
    "scope-project": SyncScope("project", "git-5f0c"),
    "scope-user": SyncScope("user"),
    "snapshot-request-minimal": SnapshotRequest(SyncScope("user")),
    "snapshot-request-full": SnapshotRequest(
        SyncScope("project", "p-1"),
        1,
        16,
        frozenset({"sha256:b", "sha256:a"}),
        (REV, R2),
        "g" * 32,
        "c" * 12,
    ),
    "snapshot-response-reset": SnapshotResponse(
        3, "paid", Q2, reset=True, generation="g1", commit="c1"
    ),
    "snapshot-response-reset-unknown": SnapshotResponse(3, "free", Q, reset=True),
    "snapshot-response-unchanged": SnapshotResponse(
        3, "free", Q, unchanged=True, generation="g1", commit="c1"
    ),
    "snapshot-response-unchanged-bodies": SnapshotResponse(
        3, "free", Q, unchanged=True, objects={REV: "text é"}, pending=(R2,)
    ),
    "snapshot-response-full": FULL,
    "snapshot-response-delta-empty": SnapshotResponse(4, "free", Q),
    "change-put-new": Change("put", "a-1", None, "text"),
    "change-put": Change("put", "a-1", REV, "text"),
    "change-delete": Change("delete", "a-1", REV),
    "commit-request": CommitRequest(
        SyncScope("project", "p-1"),
        (Change("put", "a-1", None, "t"), Change("delete", "b-1", REV)),
        2,
        None,
        False,
    ),
    "commit-request-atomic": CommitRequest(SyncScope("user"), (), 2, 7, True),
    "commit-response-empty": CommitResponse(1, "free", Q),
    "commit-response": CommitResponse(
        5,
        "paid",
        Q2,
        (AppliedEntry("a-1", "put", REV), AppliedEntry("b-1", "delete", R2)),
        REJECTED,
        True,
        "g",
        "c",
    ),
    "commit-response-unchanged": CommitResponse(5, "free", Q, changed=False),
    "identity": Identity(
        "alice",
        "paid",
        (TeamEntitlement("t1", "paid"), TeamEntitlement("t2", "free")),
        (1, 2),
        Q2,
        PlanLimits(200, None),
    ),
    "identity-paid": Identity("bob", "paid", (), (2,), Q, None),
    "error": error_from_details("unauthorized", "no token", Q, "free", {}),
    "error-426": error_from_details(
        "protocol_unsupported", "upgrade", Q, "paid", {"protocols": [1]}
    ),
    "error-412": error_from_details("manifest_changed", "stale", Q, "free", {"version": 9}),
    "error-409": error_from_details(
        "conflict", "nothing applied", Q, "free", {"conflicts": CONFLICTS}
    ),
    "tombstone": TOMB,
    "applied": AppliedEntry("a-1", "put", REV),
    "rejected-conflict-gone": RejectedEntry("d-1", "conflict", "gone"),
    "rejected-other": RejectedEntry("e-1", "too_large", "big", REV),
}
#: Cases holding what the wire leaves out (a ``currentRev`` on a non-conflict rejection) or
#: sends in another form (conflicts given as dicts).
WIRE_DROPS = {"commit-response", "rejected-other", "error-409"}
PARSERS: dict[str, Any] = {
    "quotas": parse_quotas,
    "plan-limits": parse_plan_limits,
    "scope": parse_scope,
    "snapshot-request": parse_snapshot_request,
    "snapshot-response": parse_snapshot_response,
    "commit-request": parse_commit_request,
    "commit-response": parse_commit_response,
    "identity": parse_identity,
    "error": parse_error_response,
    "change": lambda value: msgspec.convert(value, Change),
    "tombstone": lambda value: msgspec.convert(value, TombstoneEntry),
    "applied": lambda value: msgspec.convert(value, AppliedEntry),
    "rejected": lambda value: msgspec.convert(value, RejectedEntry),
}


def release_0_1() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(RELEASE_0_1.read_text(encoding="utf-8"))
    return loaded


def test_every_recorded_form_has_a_case() -> None:
    assert set(release_0_1()) == {
        *CASES,
        "note-entry-protocol-1",
        "note-entry-protocol-2",
        "snapshot-response-full-protocol-1",
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_wire_form_is_release_0_1s_field_for_field(name: str) -> None:
    expected = release_0_1()[name]
    message = CASES[name]
    sent = message.encode()
    assert json.loads(sent) == expected
    assert message.to_json() == expected
    assert b"\\u" not in sent and b", " not in sent  # compact UTF-8, like before


@pytest.mark.parametrize("name", sorted(CASES))
def test_release_0_1s_form_parses_back_to_the_message(name: str) -> None:
    parse = next(fn for prefix, fn in PARSERS.items() if name.startswith(prefix))
    parsed = parse(release_0_1()[name])
    assert parsed.to_json() == release_0_1()[name]
    if name not in WIRE_DROPS:
        assert parsed == CASES[name]


def test_protocol_1_listings_leave_typed_out_and_read_as_untyped() -> None:
    recorded = release_0_1()
    assert NOTE.to_json(1) == recorded["note-entry-protocol-1"]
    assert NOTE.to_json(2) == recorded["note-entry-protocol-2"]
    assert FULL.to_json(1) == recorded["snapshot-response-full-protocol-1"]
    assert json.loads(FULL.encode(1)) == recorded["snapshot-response-full-protocol-1"]
    parsed = parse_snapshot_response(recorded["snapshot-response-full-protocol-1"])
    assert [note.typed for note in parsed.notes] == [False, False]


def test_a_default_declared_sent_is_sent_and_a_plain_one_left_out() -> None:
    """The omission rule the declarations rely on (msgspec's ``omit_defaults`` with factories)."""
    wire = json.loads(Change("put", "a-1", None, "t").encode())
    assert wire == {"op": "put", "id": "a-1", "baseRev": None, "content": "t"}
    assert "problem" not in json.loads(Change("move", "a-1", problem="bad op").encode())
    request = json.loads(SnapshotRequest(SyncScope("user"), since=None).encode())
    assert request == {"scope": {"kind": "user"}, "protocol": 2}


@pytest.mark.parametrize("project_id", ["git-1\n", "git-\u0661", "", "a" * 129])
def test_a_project_id_with_a_final_newline_or_odd_digits_is_refused(project_id: str) -> None:
    with pytest.raises(ValidationError, match="scope"):
        parse_scope({"kind": "project", "projectId": project_id})
    body = {"protocol": 2, "scope": {"kind": "project", "projectId": project_id}}
    with pytest.raises(ValidationError):
        parse_snapshot_request(body)


def test_a_user_scope_never_carries_a_project_id() -> None:
    assert SyncScope("user", "p-1").to_json() == {"kind": "user"}
    assert parse_scope({"kind": "user", "projectId": "p-1"}) == SyncScope("user")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"userId": None},
        {"userId": None, "teamId": "t-1"},
        {"userId": "", "extra": 1},
        {"teamId": 3},
        {"userId": "a", "teamId": "b"},
        {"userId": "u-" + "0" * 32},
        [],
    ],
)
def test_an_erase_names_exactly_one_real_id(body: Any) -> None:
    with pytest.raises(ValidationError):
        parse_erase_request(body)


def test_a_client_cannot_mark_its_own_change_as_malformed() -> None:
    body = {
        "protocol": 2,
        "scope": {"kind": "user"},
        "changes": [{"op": "put", "id": "a-1", "baseRev": None, "content": "t", "problem": "x"}],
    }
    assert parse_commit_request(body).changes[0].problem is None


def test_empty_collections_are_left_out_whatever_object_holds_them() -> None:
    """msgspec leaves a plain default out only when it is the default object itself: a client
    passing ``frozenset(hashes)`` or a list must not send ``"have": []`` or ``"want": []``."""
    expected = release_0_1()["snapshot-request-minimal"]
    cases: list[tuple[Any, Any]] = [(frozenset(set()), []), (set(), ()), (frozenset(), [])]
    for have, want in cases:
        request = SnapshotRequest(SyncScope("user"), have=have, want=want)
        assert json.loads(request.encode()) == expected
        assert request.to_json() == expected
    assert SnapshotRequest(SyncScope("user"), want=[REV, REV]).want == (REV,)  # type: ignore[arg-type]
