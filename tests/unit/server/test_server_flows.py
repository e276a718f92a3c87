"""Identity, snapshots, commits, versions, tombstones, isolation and erase, in process (06, 08)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from sync_server_support import (
    ADMIN_KEY,
    Api,
    FakeClock,
    MakeApi,
    auth,
    delete,
    note_text,
    project_scope,
    put,
    rev_of,
    token_for,
)

from oharness.server.logs import JsonLogFormatter
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.protocol import (
    PlanLimits,
    Quotas,
    parse_commit_response,
    parse_identity,
    parse_manifest,
    parse_snapshot_response,
)


def test_identity(make_api: MakeApi) -> None:
    api = make_api(free_plan_limits=PlanLimits(200, 16384))
    body = api.identity().json()
    identity = parse_identity(body)
    assert (identity.user_id, identity.plan, identity.protocols) == ("alice", "free", (1, 2))
    assert body["planLimits"] == {"maxNotes": 200, "maxBodyBytes": 16384}
    assert body["quotas"]["maxNotes"] == 5000
    paid = api.as_user(token_for("alice", teams=[{"id": "t1", "plan": "paid"}]))
    body = paid.identity().json()
    assert body["plan"] == "paid" and body["planLimits"] is None
    assert body["teams"] == [{"id": "t1", "plan": "paid"}]
    assert make_api().identity().json()["planLimits"] is None  # no entitlements file


def test_commit_then_snapshot_round_trip(api: Api) -> None:
    a, b = note_text("a-1"), note_text("b-1", type="feedback")
    data = api.ok_commit([put("a-1", a), put("b-1", b)])
    response = parse_commit_response(data)
    assert response.version == 1 and [x.rev for x in response.applied] == [rev_of(a), rev_of(b)]
    snap = parse_snapshot_response(api.ok_snapshot())
    assert snap.full and snap.version == 1
    assert {n.id: n.typed for n in snap.notes} == {"a-1": False, "b-1": True}
    assert snap.objects == {rev_of(a): a, rev_of(b): b}
    idle = api.ok_snapshot(since=1)
    assert idle == {
        "version": 1,
        "generation": snap.generation,
        "commit": snap.commit,
        "unchanged": True,
        "quotas": idle["quotas"],
        "plan": "free",
    }
    assert snap.generation and snap.commit == response.commit


def test_versions_move_only_on_accepted_changes(api: Api) -> None:
    text = note_text("a-1")
    assert api.ok_commit([put("a-1", text)])["version"] == 1
    assert api.ok_commit([put("a-1", text)])["version"] == 1  # retry
    assert api.ok_commit([put("a-1", note_text("a-1", "x\n"), "f" * 32)])["version"] == 1
    assert api.ok_commit([])["version"] == 1
    edited = note_text("a-1", "edited\n")
    assert api.ok_commit([put("a-1", edited, rev_of(text))])["version"] == 2
    data = api.ok_commit([delete("a-1", rev_of(edited))])
    assert data["version"] == 3 and data["applied"] == [
        {"id": "a-1", "op": "delete", "rev": rev_of(edited)}
    ]


def test_delta_listing_with_tombstones(api: Api) -> None:
    a, b = note_text("a-1"), note_text("b-1")
    api.ok_commit([put("a-1", a), put("b-1", b)])
    api.ok_commit([delete("a-1", rev_of(a))])
    delta = api.ok_snapshot(since=1)
    assert delta["full"] is False and delta["notes"] == []
    assert [t["id"] for t in delta["tombstones"]] == ["a-1"]
    assert delta["tombstones"][0]["rev"] == rev_of(a)


def test_have_skips_bodies_and_want_fetches_them(api: Api) -> None:
    a, b = note_text("a-1"), note_text("b-1")
    api.ok_commit([put("a-1", a), put("b-1", b)])
    hashes = {n["id"]: n["hash"] for n in api.ok_snapshot()["notes"]}
    data = api.ok_snapshot(have=[hashes["a-1"]])
    assert list(data["objects"]) == [rev_of(b)]
    data = api.ok_snapshot(since=1, want=[rev_of(a), "0" * 32])
    assert data["unchanged"] is True and data["objects"] == {rev_of(a): a}
    assert data["pending"] == [] and "notes" not in data
    data = api.ok_snapshot(have=list(hashes.values()), want=[rev_of(a)])
    assert list(data["objects"]) == [rev_of(a)]


def test_large_pulls_continue_with_pending(make_api: MakeApi) -> None:
    api = make_api(quotas=Quotas(max_response_bytes=4096 + 6000))
    texts = {f"n-{i}": note_text(f"n-{i}", "x" * 1500 + "\n") for i in range(10)}
    api.ok_commit([put(i, t) for i, t in texts.items()])
    first = api.ok_snapshot()
    assert 1 <= len(first["objects"]) < 10 and first["pending"]
    assert len(json.dumps(first)) < 4096 + 6000 + 2000
    got = dict(first["objects"])
    pending = first["pending"]
    for _ in range(10):
        if not pending:
            break
        # the listing is known: ask for the rest at the same version
        page = api.ok_snapshot(want=pending, since=first["version"])
        assert page["unchanged"] is True and "notes" not in page
        assert page["objects"], "each request makes progress"
        got.update(page["objects"])
        pending = page["pending"]
    assert got == {rev_of(t): t for t in texts.values()}


def test_tombstones_expire_and_force_full_listings(
    api: Api, server_clock: FakeClock, store: MemoryObjectStore
) -> None:
    a = note_text("a-1")
    api.ok_commit([put("a-1", a), put("b-1", note_text("b-1"))])
    api.ok_commit([delete("a-1", rev_of(a))])  # v2
    server_clock.advance_days(91)
    api.ok_commit([put("c-1", note_text("c-1"))])  # v3: expires the tombstone
    stored = store.get("users/alice/projects/git-abc/memory/manifest.json")
    assert stored is not None
    manifest = parse_manifest(stored.data)
    assert manifest.gc_version == 2 and not manifest.tombstones
    assert api.ok_snapshot(since=1)["full"] is True
    assert api.ok_snapshot(since=2)["full"] is False


def test_protocol_1_clients_on_a_protocol_2_server(api: Api) -> None:
    typed, plain = note_text("t-1", type="project"), note_text("p-1")
    api.ok_commit([put("t-1", typed), put("p-1", plain)])
    old = api.ok_snapshot(protocol=1)
    assert [n["id"] for n in old["notes"]] == ["p-1"]
    assert "typed" not in old["notes"][0]
    assert list(old["objects"]) == [rev_of(plain)]
    data = api.ok_commit([put("t-2", note_text("t-2", type="user"))], protocol=1)
    assert data["rejected"][0]["reason"] == "invalid_request"
    assert "protocol 2" in data["rejected"][0]["message"]
    assert api.ok_commit([put("p-2", note_text("p-2"))], protocol=1)["version"] == 2


def test_user_and_project_scopes_are_separate(api: Api, store: MemoryObjectStore) -> None:
    api.ok_commit([put("a-1", note_text("a-1"))], scope={"kind": "user"})
    api.ok_commit([put("a-1", note_text("a-1", "project\n"))], scope=project_scope("p-1"))
    assert api.ok_snapshot(scope={"kind": "user"})["version"] == 1
    assert api.ok_snapshot(scope=project_scope("p-2"))["version"] == 0
    keys = store.list("")
    assert "users/alice/memory/manifest.json" in keys
    assert "users/alice/projects/p-1/memory/manifest.json" in keys


def test_another_users_project_id_reaches_only_the_callers_prefix(
    api: Api, store: MemoryObjectStore
) -> None:
    api.ok_commit([put("secret-1", note_text("secret-1", "alice only\n"))])
    mallory = api.as_user(token_for("mallory"))
    seen = mallory.ok_snapshot()  # same project id, same scope
    assert seen["version"] == 0 and seen["notes"] == [] and seen["objects"] == {}
    rev = rev_of(note_text("secret-1", "alice only\n"))
    assert mallory.ok_snapshot(want=[rev])["objects"] == {}
    mallory.ok_commit([put("x-1", note_text("x-1"))])
    assert {key.split("/")[1] for key in store.list("users/")} == {"alice", "mallory"}
    assert api.ok_snapshot(since=1)["unchanged"] is True


def test_odd_subjects_get_hashed_prefixes(api: Api, store: MemoryObjectStore) -> None:
    odd = api.as_user(token_for("../../alice"))
    odd.ok_commit([put("a-1", note_text("a-1"))])
    assert all(key.startswith(("users/alice/", "users/u-")) for key in store.list("users/"))
    assert not store.list("users/alice/")


def test_erase_user_deletes_everything_and_is_idempotent(
    api: Api, store: MemoryObjectStore
) -> None:
    api.ok_commit([put("a-1", note_text("a-1"))])
    api.ok_commit([put("b-1", note_text("b-1"))], scope={"kind": "user"})
    store.put("feed/alice/item.json", b"{}")
    bob = api.as_user(token_for("bob"))
    bob.ok_commit([put("c-1", note_text("c-1"))])
    response = api.client.post("/v1/admin/erase", json={"userId": "alice"}, headers=auth(ADMIN_KEY))
    body = response.json()
    assert response.status_code == 200 and body["deleted"] == 5
    assert body["erased"] == {"userId": "alice"} and "quotas" in body
    assert store.list("users/alice/") == [] and store.list("feed/alice/") == []
    assert store.get("erased/users/alice.json") is not None
    assert bob.ok_snapshot()["version"] == 1  # others untouched
    again = api.client.post("/v1/admin/erase", json={"userId": "alice"}, headers=auth(ADMIN_KEY))
    assert again.status_code == 200 and again.json()["deleted"] == 0


def test_the_erase_marker_is_written_before_anything_is_deleted(api: Api) -> None:
    order: list[tuple[str, str]] = []
    store = api.client.app.state.context.store  # type: ignore[attr-defined]
    api.ok_commit([put("a-1", note_text("a-1"))])
    store.before = lambda op, key: order.append((op, key)) if op in ("put", "delete") else None
    api.client.post("/v1/admin/erase", json={"userId": "alice"}, headers=auth(ADMIN_KEY))
    assert order[0] == ("put", "erased/users/alice.json")
    assert {op for op, _ in order[1:]} == {"delete"}


def test_team_erase_stops_the_team_making_members_paid(api: Api, store: MemoryObjectStore) -> None:
    member = api.as_user(token_for("alice", plan="free", teams=[{"id": "t1", "plan": "paid"}]))
    assert member.identity().json()["plan"] == "paid"
    store.put("feed/team-t1/x.json", b"{}")
    response = api.client.post("/v1/admin/erase", json={"teamId": "t1"}, headers=auth(ADMIN_KEY))
    assert response.status_code == 200 and response.json()["deleted"] == 1
    body = member.identity().json()
    assert body["plan"] == "free" and body["teams"] == []
    assert member.ok_snapshot()["plan"] == "free"


def test_plan_is_in_every_response(api: Api) -> None:
    paid = api.as_user(token_for("alice", plan="paid"))
    assert paid.ok_snapshot()["plan"] == "paid"
    assert paid.ok_commit([])["plan"] == "paid"
    assert paid.commit([], atomic=True, base_version=5).json()["plan"] == "paid"


def test_healthz_and_request_ids(api: Api) -> None:
    response = api.client.get("/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"
    assert len(response.headers["x-request-id"]) == 32
    echoed = api.client.get("/healthz", headers={"X-Request-Id": "abc-123"})
    assert echoed.headers["x-request-id"] == "abc-123"
    unsafe = api.client.get("/healthz", headers={"X-Request-Id": "a b\x01" * 40})
    assert unsafe.headers["x-request-id"] != "a b\x01" * 40


def test_openapi_documents_the_bearer_scheme_and_bodies(api: Api) -> None:
    schema = api.client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    commit = schema["paths"]["/v1/memory/commit"]["post"]
    assert "changes" in commit["requestBody"]["content"]["application/json"]["schema"]["required"]


def test_logs_are_json_with_request_ids_and_hold_no_content_or_tokens(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    secret_body = "the launch code is swordfish\n"
    with caplog.at_level(logging.INFO, logger="oharness.server"):
        api.ok_commit([put("a-1", note_text("a-1", secret_body))])
        api.ok_snapshot()
        api.client.get("/v1/memory/identity", headers=auth("garbage.token.value"))
    formatter = JsonLogFormatter()
    lines = [formatter.format(record) for record in caplog.records]
    entries: list[dict[str, Any]] = [json.loads(line) for line in lines]
    requests = [e for e in entries if e.get("event") == "request"]
    assert len(requests) == 3
    assert all(e["requestId"] and e["status"] and e["path"] for e in requests)
    assert requests[0]["user"] == "alice"
    commits = [e for e in entries if e.get("event") == "commit"]
    assert len(commits) == 1 and commits[0]["requestId"] == requests[0]["requestId"]
    text = "\n".join(lines)
    assert "swordfish" not in text and api.token not in text and "garbage.token" not in text


def test_a_large_commit_and_pull(api: Api) -> None:
    texts = {f"n-{i:03d}": note_text(f"n-{i:03d}", "word " * 200 + "\n") for i in range(500)}
    body_size = len(json.dumps([put(i, t) for i, t in texts.items()]))
    assert body_size > 256 * 1024  # decoded off the event loop
    data = api.ok_commit([put(i, t) for i, t in texts.items()])
    assert len(data["applied"]) == 500 and data["version"] == 1
    snap = api.ok_snapshot()
    assert len(snap["objects"]) == 500 and not snap["pending"]
