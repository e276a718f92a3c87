"""The pure commit and snapshot planning of oharness.server.planner (spec 06.3-06.5)."""

from __future__ import annotations

from typing import Any

from sync_server_support import note_text, rev_of

from oharness.server.planner import (
    DAY_MS,
    CommitLimits,
    CommitPlan,
    atomic_failure,
    fit_objects,
    plan_commit,
    plan_listing,
    plan_objects,
    prepare_changes,
)
from oharness.sync.protocol import (
    Change,
    CommitRequest,
    Manifest,
    PlanLimits,
    Quotas,
    RejectedEntry,
    SyncScope,
)

PREFIX = "users/alice/memory/"
NOW = 1_789_000_000_000


def commit(
    manifest: Manifest,
    *changes: Change,
    quotas: Quotas | None = None,
    plan: PlanLimits | None = None,
    protocol: int = 2,
    now: int = NOW,
) -> CommitPlan:
    request = CommitRequest(scope=SyncScope("user"), changes=changes, protocol=protocol)
    prepared = prepare_changes(request, frontmatter_allowance=65536)
    limits = CommitLimits(quotas or Quotas(), plan)
    return plan_commit(manifest, prepared, limits, now=now, prefix=PREFIX)


def put(note_id: str, text: str, base: str | None = None) -> Change:
    return Change("put", note_id, base, text)


def reasons(plan: CommitPlan) -> dict[str, str]:
    return {item.id: item.reason for item in plan.rejected}


def seeded(*ids: str, **kw: Any) -> Manifest:
    manifest = Manifest()
    for note_id in ids:
        manifest = commit(manifest, put(note_id, note_text(note_id, **kw))).manifest
    return manifest


def test_create_update_delete_and_versions() -> None:
    text = note_text("a-1")
    first = commit(Manifest(), put("a-1", text))
    assert first.changed and first.manifest.version == 1
    entry = first.manifest.notes["a-1"]
    assert (entry.rev, entry.v, entry.changed_at, entry.size) == (rev_of(text), 1, NOW, len(text))
    assert first.objects == {f"{PREFIX}objects/a-1/{rev_of(text)}.md": text.encode()}
    edited = note_text("a-1", "New body.\n")
    second = commit(first.manifest, put("a-1", edited, rev_of(text)))
    assert second.manifest.version == 2 and second.manifest.notes["a-1"].rev == rev_of(edited)
    third = commit(second.manifest, Change("delete", "a-1", rev_of(edited)))
    assert "a-1" not in third.manifest.notes
    tomb = third.manifest.tombstones["a-1"]
    assert (tomb.rev, tomb.v) == (rev_of(edited), 3)
    assert [a.op for a in third.applied] == ["delete"]


def test_cas_conflicts_carry_the_current_rev() -> None:
    manifest = seeded("a-1")
    current = manifest.notes["a-1"].rev
    stale = commit(manifest, put("a-1", note_text("a-1", "x\n"), "f" * 32))
    assert not stale.changed
    assert stale.rejected == (
        RejectedEntry(
            "a-1", "conflict", "the note changed on the server since this device synced it", current
        ),
    )
    exists = commit(manifest, put("a-1", note_text("a-1", "y\n"), None))
    assert exists.rejected[0].reason == "conflict" and exists.rejected[0].current_rev == current
    gone = commit(manifest, put("b-2", note_text("b-2"), "f" * 32))
    assert gone.rejected[0].reason == "conflict" and gone.rejected[0].current_rev is None
    delete_stale = commit(manifest, Change("delete", "a-1", "f" * 32))
    assert delete_stale.rejected[0].current_rev == current


def test_retries_are_no_ops() -> None:
    text = note_text("a-1")
    manifest = commit(Manifest(), put("a-1", text)).manifest
    again = commit(manifest, put("a-1", text))
    assert not again.changed and again.applied[0].rev == rev_of(text) and not again.rejected
    deleted = commit(manifest, Change("delete", "a-1", rev_of(text))).manifest
    twice = commit(deleted, Change("delete", "a-1", rev_of(text)))
    assert not twice.changed and twice.applied[0].op == "delete" and not twice.rejected


def test_recreation_after_a_tombstone() -> None:
    manifest = seeded("a-1")
    manifest = commit(manifest, Change("delete", "a-1", manifest.notes["a-1"].rev)).manifest
    again = commit(manifest, put("a-1", note_text("a-1", "back\n")))
    assert "a-1" in again.manifest.notes and "a-1" not in again.manifest.tombstones


def test_one_bad_note_never_blocks_the_others() -> None:
    plan = commit(
        Manifest(),
        put("ok-1", note_text("ok-1")),
        put("bad id", note_text("ok-2")),
        put("mismatch-1", note_text("other-1")),
        put("broken-1", "no frontmatter"),
        Change("move", "odd-1", problem="op must be 'put' or 'delete'"),
        put("ok-1", note_text("ok-1", "dup\n")),
    )
    assert [a.id for a in plan.applied] == ["ok-1"]
    assert [r.reason for r in plan.rejected] == ["invalid_request"] * 5
    assert "twice" in plan.rejected[-1].message


def test_case_collisions_are_refused() -> None:
    manifest = seeded("foo-1ab")
    plan = commit(manifest, put("Foo-1ab", note_text("Foo-1ab")))
    assert reasons(plan) == {"Foo-1ab": "case_collision"}
    both = commit(Manifest(), put("x-1", note_text("x-1")), put("X-1", note_text("X-1")))
    assert reasons(both) == {"X-1": "case_collision"}
    # a tombstone does not block, and neither does the deleted twin in the same commit
    rev = manifest.notes["foo-1ab"].rev
    swap = commit(manifest, Change("delete", "foo-1ab", rev), put("Foo-1ab", note_text("Foo-1ab")))
    assert not swap.rejected


def test_body_limits_block_growth_only() -> None:
    quotas = Quotas(max_body_bytes=100)
    big = note_text("a-1", "x" * 150 + "\n")
    assert reasons(commit(Manifest(), put("a-1", big), quotas=quotas)) == {"a-1": "too_large"}
    manifest = commit(Manifest(), put("a-1", big)).manifest  # written before the limit
    smaller = note_text("a-1", "x" * 120 + "\n")
    shrink = commit(manifest, put("a-1", smaller, rev_of(big)), quotas=quotas)
    assert not shrink.rejected and shrink.changed
    grow = commit(
        manifest, put("a-1", note_text("a-1", "x" * 200 + "\n"), rev_of(big)), quotas=quotas
    )
    assert reasons(grow) == {"a-1": "too_large"}
    free = PlanLimits(max_notes=None, max_body_bytes=100)
    assert reasons(commit(Manifest(), put("a-1", big), plan=free)) == {"a-1": "plan_limit"}


def test_note_count_limits_and_deletes_free_room() -> None:
    manifest = seeded("a-1", "b-1")
    quotas = Quotas(max_notes=2)
    full = commit(manifest, put("c-1", note_text("c-1")), quotas=quotas)
    assert reasons(full) == {"c-1": "quota_exceeded"}
    # an update is not growth
    update = commit(
        manifest, put("a-1", note_text("a-1", "z\n"), manifest.notes["a-1"].rev), quotas=quotas
    )
    assert not update.rejected
    # a delete listed after the put still frees room in the same commit
    swap = commit(
        manifest,
        put("c-1", note_text("c-1")),
        Change("delete", "a-1", manifest.notes["a-1"].rev),
        quotas=quotas,
    )
    assert not swap.rejected and set(swap.manifest.notes) == {"b-1", "c-1"}
    assert [a.id for a in swap.applied] == ["c-1", "a-1"]
    plan = commit(manifest, put("c-1", note_text("c-1")), plan=PlanLimits(max_notes=2))
    assert reasons(plan) == {"c-1": "plan_limit"}


def test_typed_notes_need_protocol_2() -> None:
    typed = note_text("t-1", type="feedback")
    assert reasons(commit(Manifest(), put("t-1", typed), protocol=1)) == {"t-1": "invalid_request"}
    assert commit(Manifest(), put("t-1", typed)).manifest.notes["t-1"].typed is True


def test_frontmatter_is_bounded() -> None:
    text = note_text("a-1", extra={"junk": "x" * 70_000})
    assert reasons(commit(Manifest(), put("a-1", text))) == {"a-1": "too_large"}


def test_tombstones_expire_at_the_next_commit_and_raise_gc_version() -> None:
    manifest = seeded("a-1", "b-1")
    manifest = commit(manifest, Change("delete", "a-1", manifest.notes["a-1"].rev)).manifest
    assert manifest.tombstones["a-1"].v == 3
    later = NOW + 91 * DAY_MS
    plan = commit(manifest, put("c-1", note_text("c-1")), now=later)
    assert "a-1" not in plan.manifest.tombstones and plan.manifest.gc_version == 3
    # a commit that changes nothing writes nothing, expiry included
    idle = commit(manifest, put("b-1", note_text("b-1")), now=later)
    assert not idle.changed and idle.manifest is manifest


def test_atomic_failure_precedence() -> None:
    def entry(reason: Any) -> RejectedEntry:
        return RejectedEntry("x", reason, "m")

    assert atomic_failure([]) is None
    assert atomic_failure([entry("conflict")])[0] == "conflict"  # type: ignore[index]
    mixed = [entry("conflict"), entry("quota_exceeded"), entry("plan_limit"), entry("too_large")]
    assert atomic_failure(mixed)[0] == "too_large"  # type: ignore[index]
    assert atomic_failure(mixed[:3])[0] == "plan_limit"  # type: ignore[index]
    assert atomic_failure(mixed[:2])[0] == "quota_exceeded"  # type: ignore[index]
    assert atomic_failure([entry("case_collision")])[0] == "conflict"  # type: ignore[index]


def test_listing_unchanged_delta_and_full() -> None:
    manifest = seeded("a-1", "b-1", "c-1")
    manifest = commit(manifest, Change("delete", "b-1", manifest.notes["b-1"].rev)).manifest
    assert plan_listing(manifest, 4, 2).unchanged
    delta = plan_listing(manifest, 2, 2)
    assert not delta.full and [n.id for n in delta.notes] == ["c-1"]
    assert [t.id for t in delta.tombstones] == ["b-1"]
    full = plan_listing(manifest, None, 2)
    assert full.full and [n.id for n in full.notes] == ["a-1", "c-1"]
    ahead = plan_listing(manifest, 99, 2)  # the server was reset below the client's version
    assert ahead.full
    gc = Manifest(version=10, gc_version=6, notes=manifest.notes)
    assert plan_listing(gc, 5, 2).full and not plan_listing(gc, 6, 2).full


def test_protocol_1_listings_hide_typed_notes() -> None:
    manifest = commit(
        Manifest(),
        put("t-1", note_text("t-1", type="user")),
        put("u-1", note_text("u-1")),
    ).manifest
    assert [n.id for n in plan_listing(manifest, None, 1).notes] == ["u-1"]
    assert [n.id for n in plan_listing(manifest, None, 2).notes] == ["t-1", "u-1"]
    listing = plan_listing(manifest, None, 1)
    refs, _ = plan_objects(
        manifest,
        listing,
        have=frozenset(),
        want=[manifest.notes["t-1"].rev],
        prefix=PREFIX,
        protocol=1,
        budget=10**6,
    )
    assert [r.rev for r in refs] == [manifest.notes["u-1"].rev]


def test_objects_respect_have_want_and_the_budget() -> None:
    manifest = seeded("a-1", "b-1", "c-1")
    listing = plan_listing(manifest, None, 2)
    size = manifest.notes["a-1"].size
    have = frozenset({manifest.notes["a-1"].hash})
    refs, pending = plan_objects(
        manifest, listing, have=have, want=[], prefix=PREFIX, protocol=2, budget=10**6
    )
    assert [r.rev for r in refs] == [manifest.notes[i].rev for i in ("b-1", "c-1")]
    assert pending == []
    refs, pending = plan_objects(
        manifest,
        listing,
        have=frozenset(),
        want=[manifest.notes["c-1"].rev, "f" * 32],
        prefix=PREFIX,
        protocol=2,
        budget=size * 2,
    )
    assert [r.rev for r in refs] == [manifest.notes[i].rev for i in ("c-1", "a-1")]
    assert pending == [manifest.notes["b-1"].rev]
    # one body is always sent, even over the budget
    refs, pending = plan_objects(
        manifest, listing, have=frozenset(), want=[], prefix=PREFIX, protocol=2, budget=1
    )
    assert len(refs) == 1 and len(pending) == 2


def test_fit_objects_counts_json_escaping() -> None:
    quoted = '"' * 50
    objects, pending = fit_objects([("r1", quoted), ("r2", quoted)], budget=120)
    assert list(objects) == ["r1"] and pending == ["r2"]


def test_each_limit_at_its_boundary() -> None:
    """A body of exactly the quota's bytes (or the plan's) is taken, one byte more is not; a
    scope may fill to exactly its note quota and no further."""
    quotas = Quotas(max_body_bytes=100)
    plan = PlanLimits(max_notes=None, max_body_bytes=100)
    for limit in ({"quotas": quotas}, {"plan": plan}):
        exact = commit(Manifest(), put("a-1", note_text("a-1", "é" * 50)), **limit)
        assert not exact.rejected and exact.changed
        over = commit(Manifest(), put("a-1", note_text("a-1", "é" * 50 + "x")), **limit)
        assert set(reasons(over).values()) <= {"too_large", "plan_limit"} and reasons(over)
    one_left = seeded("a-1")
    filled = commit(one_left, put("b-1", note_text("b-1")), quotas=Quotas(max_notes=2))
    assert not filled.rejected and set(filled.manifest.notes) == {"a-1", "b-1"}
    by_plan = commit(one_left, put("b-1", note_text("b-1")), plan=PlanLimits(max_notes=2))
    assert not by_plan.rejected
