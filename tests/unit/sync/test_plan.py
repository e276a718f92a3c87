"""Every row of the reconciliation table (spec 07.2), on the pure planner."""

from __future__ import annotations

import pytest

from oharness.sync.plan import (
    BaseView,
    Kind,
    LocalState,
    RemoteState,
    RemoteView,
    plan_note,
    plan_sync,
)

B = BaseView("rev-base", "hash-base")
SAME = LocalState("hash-base")
CHANGED = LocalState("hash-local")
R_SAME = RemoteState("rev-base", "hash-base")
R_CHANGED = RemoteState("rev-new", "hash-remote")
R_TOMB = RemoteState("rev-base", deleted=True)


def delta(entry: RemoteState | None) -> RemoteView:
    return RemoteView({"n": entry} if entry else {}, full=False)


def full(entry: RemoteState | None) -> RemoteView:
    return RemoteView({"n": entry} if entry else {}, full=True)


@pytest.mark.parametrize(
    ("local", "base", "remote", "kind", "base_rev"),
    [
        (SAME, B, delta(None), None, None),  # same | same (delta leaves it out)
        (SAME, B, full(R_SAME), None, None),  # same | same (listed)
        (CHANGED, B, delta(None), Kind.UPLOAD, "rev-base"),  # changed | same
        (None, B, delta(None), Kind.UPLOAD_DELETE, "rev-base"),  # deleted | same
        (SAME, B, delta(R_CHANGED), Kind.DOWNLOAD, None),  # same | changed
        (SAME, B, delta(R_TOMB), Kind.DELETE_LOCAL, None),  # same | deleted
        (CHANGED, B, delta(R_TOMB), Kind.UPLOAD, None),  # changed | deleted: re-create
        (None, B, delta(R_CHANGED), Kind.DOWNLOAD, None),  # deleted | changed
        (LocalState("hash-remote"), B, delta(R_CHANGED), Kind.ADVANCE_BASE, None),
        (CHANGED, B, delta(R_CHANGED), Kind.MERGE, None),  # changed | changed
        (LocalState("h"), None, full(RemoteState("r", "h")), Kind.ADVANCE_BASE, None),
        (LocalState("h"), None, full(RemoteState("r", "other")), Kind.CONFLICT, None),
        (None, B, delta(R_TOMB), Kind.CLEAR_BASE, None),  # deleted | deleted
        (None, None, full(R_CHANGED), Kind.DOWNLOAD, None),  # absent, no base | present
        (CHANGED, None, full(None), Kind.UPLOAD, None),  # present, no base | absent
        (SAME, B, full(None), Kind.DELETE_LOCAL, None),  # synced & unchanged | expired
        (CHANGED, B, full(None), Kind.CONFLICT, None),  # changed | expired
        (None, B, full(None), Kind.CLEAR_BASE, None),  # deleted | expired
        (None, None, full(R_TOMB), None, None),  # never had it, deleted there
    ],
)
def test_every_row(
    local: LocalState | None,
    base: BaseView | None,
    remote: RemoteView,
    kind: Kind | None,
    base_rev: str | None,
) -> None:
    action = plan_note("n", local, base, remote)
    if kind is None:
        assert action is None
    else:
        assert action is not None and action.kind is kind
        assert action.base_rev == base_rev


@pytest.mark.parametrize(
    ("local", "remote"),
    [(CHANGED, delta(None)), (SAME, delta(R_CHANGED)), (None, delta(None))],
)
def test_a_missing_base_copy_with_any_change_is_a_conflict(
    local: LocalState | None, remote: RemoteView
) -> None:
    action = plan_note("n", local, BaseView("rev-base", "hash-base", has_copy=False), remote)
    assert action is not None and action.kind is Kind.CONFLICT
    untouched = plan_note("n", SAME, BaseView("rev-base", "hash-base", has_copy=False), delta(None))
    assert untouched is None


def test_unsyncable_and_conflicted_notes_are_left_alone() -> None:
    local = {"bad": SAME, "open": CHANGED}
    base = {"bad": B, "open": B, "gone": B}
    actions = plan_sync(
        local,
        base,
        RemoteView({}, full=True),
        unsyncable={"bad", "gone"},
        conflicted={"open"},
    )
    assert actions == []  # an unreadable file is never a deletion; a conflict waits


@pytest.mark.parametrize("remote", [delta(R_TOMB), full(None)], ids=["deleted", "expired"])
def test_a_missing_base_copy_of_a_note_gone_on_both_sides_only_clears_the_base(
    remote: RemoteView,
) -> None:
    action = plan_note("n", None, BaseView("rev-base", "hash-base", has_copy=False), remote)
    assert action is not None and action.kind is Kind.CLEAR_BASE


def test_a_pass_plans_every_note_sorted_by_id_and_leaves_out_nothing_rows() -> None:
    local = {"b": CHANGED, "a": SAME, "c": SAME}
    base = {"a": B, "b": B, "c": B}
    remote = RemoteView({"a": R_CHANGED, "d": R_CHANGED}, full=False)
    actions = plan_sync(local, base, remote)
    assert [(action.id, action.kind) for action in actions] == [
        ("a", Kind.DOWNLOAD),
        ("b", Kind.UPLOAD),
        ("d", Kind.DOWNLOAD),
    ]  # "c" is unchanged on both sides: no action
