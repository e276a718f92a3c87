"""What each protocol operation asks of the store, counted by kind (docs/scaling.md): an idle
check is one read, a commit of n notes among 5,000 at most 3 + n operations, and an erase or a
reset of the storage is still seen at once by another instance that had cached the scope."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from sync_server_support import ADMIN_KEY, Api, FakeMonotonic, MakeApi, note_text, put, token_for

from oharness.storage.counting import READS, CountingObjectStore
from oharness.storage.file import FileObjectStore
from oharness.storage.in_memory import MemoryObjectStore
from oharness.storage.object_store import ObjectStore

NOTES = 5000
BATCH = 500
TEAM = [{"id": "t1", "plan": "paid"}]


def seed(api: Api, count: int) -> dict[str, Any]:
    """``count`` notes in commits of 500; the last commit's answer."""
    answer: dict[str, Any] = {}
    for start in range(0, count, BATCH):
        changes = [
            put(f"n-{index}", note_text(f"n-{index}", f"Body {index}.\n"))
            for index in range(start, min(count, start + BATCH))
        ]
        answer = api.ok_commit(changes)
    return answer


def idle_body(seen: dict[str, Any]) -> dict[str, Any]:
    """What a client that saw ``seen`` sends with its next snapshot."""
    return {
        "since": seen["version"],
        "generation": seen["generation"],
        "sinceCommit": seen["commit"],
    }


def snapshot(api: Api, **fields: Any) -> Any:
    body = {"protocol": 2, "scope": {"kind": "project", "projectId": "git-abc"}, **fields}
    return api.client.post(
        "/v1/memory/snapshot", json=body, headers={"Authorization": f"Bearer {api.token}"}
    )


@pytest.fixture
def counting() -> CountingObjectStore:
    return CountingObjectStore(MemoryObjectStore())


@pytest.fixture
def seeded(make_api: MakeApi, counting: CountingObjectStore) -> tuple[Api, dict[str, Any]]:
    api = make_api(on_store=counting)
    return api, seed(api, NOTES)


def test_an_idle_check_costs_one_storage_read(
    seeded: tuple[Api, dict[str, Any]], counting: CountingObjectStore
) -> None:
    api, seen = seeded
    counting.reset()
    for _ in range(5):
        response = snapshot(api, **idle_body(seen))
        assert response.json()["unchanged"] is True
    assert counting.total().calls == 5
    assert counting.calls("conditional_get") == 5
    assert counting.total().bytes_in == 0  # the store answered "not modified" each time


def test_an_idle_check_on_an_instance_that_never_saw_the_scope_is_one_read(
    seeded: tuple[Api, dict[str, Any]], make_api: MakeApi, counting: CountingObjectStore
) -> None:
    _, seen = seeded
    other = make_api(on_store=counting)
    counting.reset()
    assert snapshot(other, **idle_body(seen)).json()["unchanged"] is True
    assert counting.total().calls == 1 and counting.calls("get") == 1


def test_an_idle_check_of_a_team_member_stays_one_read(
    make_api: MakeApi, counting: CountingObjectStore, monotonic: FakeMonotonic
) -> None:
    api = make_api(on_store=counting).as_user(token_for("alice", teams=TEAM))
    seen = seed(api, 10)
    snapshot(api, **idle_body(seen))
    counting.reset()
    for _ in range(3):
        assert snapshot(api, **idle_body(seen)).json()["unchanged"] is True
    assert counting.total().calls == 3
    monotonic.now += 301  # the team's marker is read again after its lifetime
    assert snapshot(api, **idle_body(seen)).json()["unchanged"] is True
    assert counting.total(READS).calls == 5


@pytest.mark.parametrize("changed", [1, 3])
def test_a_commit_among_five_thousand_costs_four_operations_plus_one_per_note(
    seeded: tuple[Api, dict[str, Any]], counting: CountingObjectStore, changed: int
) -> None:
    api, seen = seeded
    listing = api.ok_snapshot(have=[])  # learn the current revisions
    revs = {note["id"]: note["rev"] for note in listing["notes"]}
    counting.reset()
    changes = [
        put(f"n-{index}", note_text(f"n-{index}", "Edited.\n"), revs[f"n-{index}"])
        for index in range(changed)
    ]
    answer = api.ok_commit(changes)
    assert answer["version"] == seen["version"] + 1 and len(answer["applied"]) == changed
    # The manifest, the erase marker, the key envelope (is the account encrypted?), the
    # bodies and the manifest's compare-and-swap.
    assert counting.total().calls <= 4 + changed
    assert counting.calls("conditional_put") == 1  # the manifest, compare-and-swap


def test_a_delta_with_one_change_reads_the_manifest_marker_and_one_body(
    seeded: tuple[Api, dict[str, Any]], counting: CountingObjectStore
) -> None:
    api, seen = seeded
    listing = api.ok_snapshot(have=[])
    rev = {note["id"]: note["rev"] for note in listing["notes"]}["n-7"]
    api.ok_commit([put("n-7", note_text("n-7", "Changed.\n"), rev)])
    counting.reset()
    delta = snapshot(api, **idle_body(seen)).json()
    assert [note["id"] for note in delta["notes"]] == ["n-7"]
    # The manifest, the account's erase marker, one body, the key envelope.
    assert counting.total().calls == 4


def test_an_erase_on_one_instance_refuses_an_idle_check_on_another_at_once(
    seeded: tuple[Api, dict[str, Any]], make_api: MakeApi, counting: CountingObjectStore
) -> None:
    api, seen = seeded
    other = make_api(on_store=counting)
    assert snapshot(other, **idle_body(seen)).json()["unchanged"] is True  # cached there
    erased = api.client.post(
        "/v1/admin/erase",
        json={"userId": "alice"},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert erased.status_code == 200, erased.text
    for instance in (api, other):
        assert snapshot(instance, **idle_body(seen)).json()["error"] == "account_erased"
        assert snapshot(instance).json()["error"] == "account_erased"
        assert instance.identity().json()["error"] == "account_erased"
        refused = instance.commit([put("n-1", note_text("n-1", "After.\n"))])
        assert refused.status_code == 403


def test_a_team_erase_reaches_another_instance_within_its_lifetime(
    make_api: MakeApi, counting: CountingObjectStore, monotonic: FakeMonotonic
) -> None:
    member = token_for("alice", teams=TEAM)
    here, there = (make_api(on_store=counting).as_user(member) for _ in range(2))
    assert here.identity().json()["plan"] == there.identity().json()["plan"] == "paid"
    response = here.client.post(
        "/v1/admin/erase", json={"teamId": "t1"}, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert response.status_code == 200
    assert here.identity().json()["plan"] == "free"  # the erasing instance knows at once
    assert there.identity().json()["plan"] == "paid"  # the other trusts its read a while
    monotonic.now += 300
    assert there.identity().json()["plan"] == "free"


# -- resets and restores seen by an instance that cached the scope ----------------------------


def later(seconds: float) -> Any:
    return lambda: time.time_ns() + int(seconds * 1e9)


@pytest.mark.parametrize("backend", ["memory", "file"])
def test_a_reset_is_seen_by_an_instance_that_cached_the_scope(
    make_api: MakeApi, tmp_path: Path, backend: str
) -> None:
    root = tmp_path / "storage"
    store: ObjectStore = (
        MemoryObjectStore() if backend == "memory" else FileObjectStore(root, clock_ns=later(60))
    )
    writer, watcher = make_api(on_store=store), make_api(on_store=store)
    seen = seed(writer, 3)
    for _ in range(2):  # the watcher caches the head (and, on files, the manifest's identity)
        assert snapshot(watcher, **idle_body(seen)).json()["unchanged"] is True
    if isinstance(store, MemoryObjectStore):
        store._objects.clear()
    else:
        shutil.rmtree(root / "users")
    for index in range(3):  # other machines bring the version back to where it was
        writer.ok_commit([put(f"x-{index}", note_text(f"x-{index}"))])
    assert snapshot(watcher, **idle_body(seen)).json()["reset"] is True


def test_a_restored_older_copy_with_its_old_times_is_seen_on_files(
    make_api: MakeApi, tmp_path: Path
) -> None:
    root = tmp_path / "storage"
    store = FileObjectStore(root, clock_ns=later(60))
    writer, watcher = make_api(on_store=store), make_api(on_store=store)
    seed(writer, 2)
    backup = tmp_path / "backup"
    shutil.copytree(root / "users", backup)  # copy2: the old modification times
    seen = writer.ok_commit([put("b-1", note_text("b-1"))])
    assert snapshot(watcher, **idle_body(seen)).json()["unchanged"] is True
    shutil.rmtree(root / "users")
    shutil.copytree(backup, root / "users")
    writer.ok_commit([put("c-1", note_text("c-1"))])  # another version at the same number
    assert snapshot(watcher, **idle_body(seen)).json()["reset"] is True
