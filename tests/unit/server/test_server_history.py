"""Storage generation and commit history (docs/sync-protocol.md): a reset or a restore of an
older copy is answered ``reset`` whatever happened since; no-op commits say they wrote nothing;
inputs Python cannot hold (huge integers, lone surrogates) and reserved subjects are refused."""

from __future__ import annotations

from sync_server_support import (
    Api,
    MakeApi,
    auth,
    note_text,
    put,
    snapshot_body,
    token_for,
)

from oharness.storage.in_memory import MemoryObjectStore


def _snapshot(api: Api, **extra: object) -> dict[str, object]:
    body = {**snapshot_body(), **extra}
    response = api.client.post("/v1/memory/snapshot", json=body, headers=auth(api.token))
    assert response.status_code == 200, response.text
    data: dict[str, object] = response.json()
    return data


def test_every_answer_names_the_generation_and_commit(api: Api) -> None:
    first = api.ok_commit([put("a-1", note_text("a-1"))])
    second = api.ok_commit([put("b-1", note_text("b-1"))])
    assert first["changed"] is True and first["generation"] == second["generation"]
    assert first["commit"] != second["commit"]
    idle = _snapshot(api, since=2, generation=second["generation"], sinceCommit=second["commit"])
    assert idle["unchanged"] is True and idle["commit"] == second["commit"]
    again = api.ok_commit([put("b-1", note_text("b-1"))])  # the same bytes: a no-op
    assert again["changed"] is False and again["version"] == 2


def test_a_reset_caught_up_past_the_clients_version_is_answered_reset(
    api: Api, store: MemoryObjectStore
) -> None:
    seen = api.ok_commit([put("a-1", note_text("a-1"))])
    store._objects.clear()  # the operator empties the storage
    for index in range(3):
        api.ok_commit([put(f"n-{index}", note_text(f"n-{index}"))])
    answer = _snapshot(api, since=1, generation=seen["generation"], sinceCommit=seen["commit"])
    assert answer["reset"] is True and answer["version"] == 3
    assert "notes" not in answer


def test_a_restored_older_copy_is_answered_reset_at_the_same_version(
    api: Api, store: MemoryObjectStore
) -> None:
    api.ok_commit([put("a-1", note_text("a-1"))])
    backup = dict(store._objects)
    seen = api.ok_commit([put("b-1", note_text("b-1"))])
    store._objects = backup  # back at version 1, same generation
    api.ok_commit([put("c-1", note_text("c-1"))])  # another version 2
    answer = _snapshot(api, since=2, generation=seen["generation"], sinceCommit=seen["commit"])
    assert answer["reset"] is True
    honest = _snapshot(api, since=2)  # an old client, knowing no commit id: served as before
    assert honest.get("unchanged") is True


def test_huge_integers_and_lone_surrogates_are_400(api: Api) -> None:
    headers = {**auth(api.token), "Content-Type": "application/json"}
    scope = '{"kind": "project", "projectId": "git-abc"}'
    huge = '{"protocol": 2, "scope": ' + scope + ', "since": ' + "9" * 5000 + "}"
    response = api.client.post("/v1/memory/snapshot", content=huge, headers=headers)
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"
    lone = '{"protocol": 2, "scope": ' + scope + ', "have": ["\\ud800"]}'
    response = api.client.post("/v1/memory/snapshot", content=lone, headers=headers)
    assert response.status_code == 400 and "surrogate" in response.json()["message"]


def test_a_note_with_a_lone_surrogate_escape_is_rejected_alone(api: Api) -> None:
    bad = '---\n{"id":"bad-1","summary":"cut \\ud83d","tags":[]}\n---\nbody\n'
    data = api.ok_commit([put("bad-1", bad), put("good-1", note_text("good-1"))])
    assert [item["id"] for item in data["applied"]] == ["good-1"]
    assert data["rejected"][0]["id"] == "bad-1"


def test_a_subject_of_the_hashed_shape_is_refused(make_api: MakeApi) -> None:
    api = make_api()
    hashed = "u-" + "0" * 32
    response = api.as_user(token_for(hashed)).identity()
    assert response.status_code == 401 and "reserves" in response.json()["message"]
    assert api.identity().status_code == 200  # ordinary subjects still work
