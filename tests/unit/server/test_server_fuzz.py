"""Fuzzing the request handling (spec 13.2): any body gets a table answer, never a crash."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from sync_server_support import FakeClock, auth, make_settings, note_text, token_for

from oharness.server.app import create_app
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.protocol import ERROR_STATUS, Quotas, parse_manifest

STORE = MemoryObjectStore()
CLIENT = TestClient(
    create_app(
        STORE,
        make_settings(quotas=Quotas(max_notes=50, max_changes_per_commit=20)),
        clock=FakeClock(),
    )
)
HEADERS = auth(token_for("fuzz"))
ALLOWED = {200} | set(ERROR_STATUS.values())

ids = st.sampled_from(["a-1", "A-1", "b-2", "bad id", "../x", "", "x" * 130])
revs = st.one_of(st.none(), st.text(max_size=40), st.sampled_from(["0" * 32]))
contents = st.one_of(
    st.builds(note_text, ids.filter(lambda i: i not in ("", "bad id", "../x", "x" * 130))),
    st.text(max_size=200),
    st.integers(),
    st.none(),
)
changes = st.fixed_dictionaries(
    {"op": st.sampled_from(["put", "delete", "move", 3]), "id": ids},
    optional={"baseRev": revs, "content": contents},
)
scopes = st.one_of(
    st.just({"kind": "user"}),
    st.just({"kind": "project", "projectId": "p-1"}),
    st.dictionaries(st.sampled_from(["kind", "projectId"]), st.text(max_size=10)),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
commits = st.fixed_dictionaries(
    {"protocol": st.sampled_from([1, 2, 3, "2"]), "scope": scopes},
    optional={
        "changes": st.one_of(st.lists(changes, max_size=6), json_values),
        "atomic": st.one_of(st.booleans(), json_values),
        "baseVersion": st.one_of(st.integers(min_value=-1, max_value=5), st.none()),
    },
)
snapshots = st.fixed_dictionaries(
    {"protocol": st.sampled_from([1, 2, 3]), "scope": scopes},
    optional={
        "since": st.one_of(st.integers(min_value=-1, max_value=10), json_values),
        "have": st.one_of(st.lists(st.text(max_size=70), max_size=4), json_values),
        "want": st.one_of(st.lists(st.text(max_size=40), max_size=4), json_values),
    },
)


def check(response: Any) -> None:
    assert response.status_code in ALLOWED, response.text
    body = response.json()
    assert "quotas" in body and "plan" in body
    if response.status_code != 200:
        assert body["error"] in ERROR_STATUS


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(commits, json_values))
def test_commit_bodies_never_crash(body: Any) -> None:
    check(CLIENT.post("/v1/memory/commit", content=json.dumps(body), headers=HEADERS))
    check_state()


@settings(max_examples=200, deadline=None)
@given(body=st.one_of(snapshots, json_values))
def test_snapshot_bodies_never_crash(body: Any) -> None:
    check(CLIENT.post("/v1/memory/snapshot", content=json.dumps(body), headers=HEADERS))


def check_state() -> None:
    """Every manifest parses, holds no case twins, stays within maxNotes, and names objects
    that exist."""
    for key in STORE.list("users/"):
        if not key.endswith("manifest.json"):
            continue
        stored = STORE.get(key)
        assert stored is not None
        manifest = parse_manifest(stored.data)
        lower = [note_id.lower() for note_id in manifest.notes]
        assert len(lower) == len(set(lower)), "case twins slipped in"
        assert len(manifest.notes) <= 50
        prefix = key.removesuffix("manifest.json")
        for note_id, note in manifest.notes.items():
            assert STORE.get(f"{prefix}objects/{note_id}/{note.rev}.md") is not None
