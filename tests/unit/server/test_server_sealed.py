"""Sealed notes on the server: an encrypted scope takes only sealed content under opaque ids,
stores it as sent, and the storage holds none of the note's text (issue 31)."""

from __future__ import annotations

import httpx2
from sync_server_support import Api, MakeApi, auth, delete, note_text, project_scope, put

from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.e2e import NoteCipher, new_account_key
from oharness.sync.protocol.sealed import (
    SEALED_PREFIX,
    bucket_size,
    is_opaque_id,
    sealed_bytes,
    sealed_text,
)

CHEAP = 2**10  # scrypt cost for tests: the cipher, not the key derivation, is under test
SCOPE_KEY = "project:git-5f0c1e2d"
SECRET_WORDS = ("Tuesdays", "deploy-day", "summary", "git-5f0c1e2d")


def cipher() -> NoteCipher:
    return NoteCipher(new_account_key("correct horse", n=CHEAP).data_key)


def sealed_put(
    keys: NoteCipher, note_id: str, body: str, base_rev: str | None = None
) -> dict[str, object]:
    text = note_text(note_id, body, summary="Deploys go out on Tuesdays")
    sealed = sealed_text(keys.seal(SCOPE_KEY, note_id, text))
    return put(keys.opaque_id(SCOPE_KEY, note_id), sealed, base_rev)


def test_a_sealed_note_is_stored_as_sent_and_reads_back(
    make_api: MakeApi, store: MemoryObjectStore
) -> None:
    api, keys = make_api(), cipher()
    scope = project_scope(keys.opaque_scope(SCOPE_KEY))
    change = sealed_put(keys, "deploy-day-1a2", "At noon.")
    answer = api.ok_commit([change], scope=scope)
    [applied] = answer["applied"]
    assert applied["id"] == change["id"] and is_opaque_id(applied["id"])
    listing = api.ok_snapshot(scope=scope)
    [entry] = listing["notes"]
    assert entry["typed"] is False and entry["size"] == len(str(change["content"]))
    stored = listing["objects"][entry["rev"]]
    assert stored == change["content"]
    raw = sealed_bytes(stored)
    assert raw is not None
    opened = keys.open(SCOPE_KEY, str(change["id"]), raw)
    assert opened[0] == "deploy-day-1a2" and "At noon." in opened[1]

    # The same content sealed again is the same revision: a retry is a no-op.
    again = api.ok_commit([sealed_put(keys, "deploy-day-1a2", "At noon.")], scope=scope)
    assert again["applied"][0]["rev"] == applied["rev"] and again["changed"] is False
    # An update and a delete work on revisions as for any note.
    update = sealed_put(keys, "deploy-day-1a2", "At one.", base_rev=applied["rev"])
    updated = api.ok_commit([update], scope=scope)["applied"][0]
    api.ok_commit([delete(str(change["id"]), updated["rev"])], scope=scope)
    assert api.ok_snapshot(scope=scope)["notes"] == []

    everything = b"".join(stored.data for stored in store._objects.values())
    for word in SECRET_WORDS:
        assert word.encode() not in everything, word


def test_an_encrypted_scope_refuses_plain_notes_and_plain_scopes_refuse_sealed_ones(
    make_api: MakeApi,
) -> None:
    api, keys = make_api(), cipher()
    sealed_scope = project_scope(keys.opaque_scope(SCOPE_KEY))
    plain = put("deploy-day-1a2", note_text("deploy-day-1a2", "At noon."))
    [refused] = api.ok_commit([plain], scope=sealed_scope)["rejected"]
    assert refused["reason"] == "invalid_request"
    assert "takes sealed notes only" in refused["message"]
    [refused] = api.ok_commit([sealed_put(keys, "a-1", "x")], scope=project_scope())["rejected"]
    assert "belongs in an end-to-end encrypted scope" in refused["message"]
    readable_id = put("deploy-day-1a2", sealed_text(keys.seal(SCOPE_KEY, "deploy-day-1a2", "x")))
    [refused] = api.ok_commit([readable_id], scope=sealed_scope)["rejected"]
    assert "opaque id" in refused["message"]
    garbage = put(keys.opaque_id(SCOPE_KEY, "a-1"), SEALED_PREFIX + "not*base64")
    [refused] = api.ok_commit([garbage], scope=sealed_scope)["rejected"]
    assert "base64url" in refused["message"]
    assert api.ok_snapshot(scope=sealed_scope)["notes"] == []


def test_a_sealed_note_is_held_to_the_padded_size_of_the_largest_allowed_note(
    make_api: MakeApi,
) -> None:
    api, keys = make_api(), cipher()
    scope = project_scope(keys.opaque_scope(SCOPE_KEY))
    limit = 131072  # the default body limit, with the 64 KiB frontmatter allowance
    cap = bucket_size(2 * (limit + 65536))
    fits = sealed_put(keys, "big-1", "x" * limit)
    assert api.ok_commit([fits], scope=scope)["applied"]
    over = put(keys.opaque_id(SCOPE_KEY, "huge-1"), sealed_text(bytes(cap * 2 + 29)))
    [refused] = api.ok_commit([over], scope=scope)["rejected"]
    assert refused["reason"] == "too_large" and f"over the {cap}" in refused["message"]


def keys_put(api: Api, envelope: dict[str, object] | None, base: int) -> httpx2.Response:
    body = {"protocol": 2, "envelope": envelope, "baseVersion": base}
    return api.client.put("/v1/memory/keys", json=body, headers=auth(api.token))


def test_the_key_envelope_is_kept_as_given_and_replaced_only_from_its_version(
    make_api: MakeApi, store: MemoryObjectStore
) -> None:
    api = make_api()
    first = api.client.get("/v1/memory/keys", headers=auth(api.token)).json()
    assert (first["envelope"], first["version"]) == (None, 0)
    assert api.identity().json().get("encrypted", False) is False
    envelope = new_account_key("correct horse", n=CHEAP).envelope.to_json()
    stored = keys_put(api, envelope, 0)
    assert stored.status_code == 200 and stored.json()["version"] == 1
    assert api.client.get("/v1/memory/keys", headers=auth(api.token)).json()["envelope"] == envelope
    assert api.identity().json()["encrypted"] is True
    stale = keys_put(api, {"other": 1}, 0)  # another device replaced it meanwhile
    assert stale.status_code == 409 and stale.json()["version"] == 1
    assert store.get("users/alice/keys.json") is not None
    other = make_api(user="bob")  # an envelope is one account's
    assert other.identity().json().get("encrypted", False) is False
    assert keys_put(api, None, 1).json()["version"] == 2  # turned off
    assert api.identity().json().get("encrypted", False) is False
    too_big = keys_put(api, {"x": "y" * 20_000}, 2)
    assert too_big.status_code == 413


def test_an_encrypted_account_refuses_its_plain_scopes(make_api: MakeApi) -> None:
    api, keys = make_api(), cipher()
    plain = put("deploy-day-1a2", note_text("deploy-day-1a2", "At noon."))
    api.ok_commit([plain])  # before encryption: a plain project scope
    seen = api.ok_snapshot()
    assert keys_put(api, new_account_key("p", n=CHEAP).envelope.to_json(), 0).status_code == 200
    for refused in (
        api.commit([put("late-1", note_text("late-1", "x"))]),
        api.snapshot(),  # a full listing would hand out the old readable notes
        api.snapshot(scope={"kind": "user"}),
    ):
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"] == "encrypted_account"
        assert "oharness sync unlock" in refused.json()["message"]
    # An idle check returns no note, so it stays one read (the migration erases the scope).
    assert api.snapshot(since=seen["version"]).json()["unchanged"] is True
    sealed_scope = project_scope(keys.opaque_scope(SCOPE_KEY))
    assert api.ok_commit([sealed_put(keys, "a-1", "x")], scope=sealed_scope)["applied"]


def test_an_account_lists_and_erases_its_own_scopes_only(
    make_api: MakeApi, store: MemoryObjectStore
) -> None:
    api, keys = make_api(), cipher()
    api.ok_commit([put("a-1", note_text("a-1", "x"))])
    api.ok_commit([put("u-1", note_text("u-1", "y"))], scope={"kind": "user"})
    sealed_scope = project_scope(keys.opaque_scope(SCOPE_KEY))
    api.ok_commit([sealed_put(keys, "b-2", "z")], scope=sealed_scope)
    bob = make_api(user="bob")
    bob.ok_commit([put("bob-1", note_text("bob-1", "bob's"))])
    listed = api.client.get("/v1/memory/scopes", headers=auth(api.token)).json()["scopes"]
    assert listed == [{"kind": "user"}, project_scope("git-abc"), sealed_scope] or listed == [
        {"kind": "user"},
        sealed_scope,
        project_scope("git-abc"),
    ]
    body = {"protocol": 2, "scope": project_scope("git-abc")}
    erased = api.client.post("/v1/memory/scopes/erase", json=body, headers=auth(api.token))
    assert erased.status_code == 200 and erased.json()["deleted"] == 2  # manifest, one object
    assert not [key for key in store._objects if key.startswith("users/alice/projects/git-abc/")]
    assert bob.ok_snapshot()["notes"][0]["id"] == "bob-1"  # another account's scope is its own
    assert api.ok_snapshot(scope=sealed_scope)["notes"]
    again = api.client.post("/v1/memory/scopes/erase", json=body, headers=auth(api.token))
    assert again.json()["deleted"] == 0
