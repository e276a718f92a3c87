"""Every row of the reconciliation table (spec 07.2), on the pure planner."""

from __future__ import annotations

import pytest

from oharness.sync.plan import (
    Action,
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


def act(
    kind: Kind, *, base_rev: str | None = None, remote: RemoteState | None = None, reason: str = ""
) -> Action:
    return Action(kind, "n", base_rev=base_rev, remote=remote, reason=reason)


@pytest.mark.parametrize(
    ("local", "base", "remote", "expected"),
    [
        (SAME, B, delta(None), None),  # same | same (delta leaves it out)
        (SAME, B, full(R_SAME), None),  # same | same (listed)
        (CHANGED, B, delta(None), act(Kind.UPLOAD, base_rev="rev-base")),  # changed | same
        (None, B, delta(None), act(Kind.UPLOAD_DELETE, base_rev="rev-base")),  # deleted | same
        (
            SAME,
            B,
            delta(R_CHANGED),
            act(Kind.DOWNLOAD, remote=R_CHANGED, reason="pull-update"),
        ),  # same | changed: the local copy is backed up as a pull-update
        (
            SAME,
            B,
            delta(R_TOMB),
            act(Kind.DELETE_LOCAL, remote=R_TOMB, reason="pull-delete"),
        ),  # same | deleted
        (
            CHANGED,
            B,
            delta(R_TOMB),
            act(Kind.UPLOAD, base_rev=None, remote=R_TOMB, reason="recreate"),
        ),  # changed | deleted: re-create
        (
            None,
            B,
            delta(R_CHANGED),
            act(Kind.DOWNLOAD, remote=R_CHANGED, reason="edited-there-deleted-here"),
        ),  # deleted | changed
        (
            LocalState("hash-remote"),
            B,
            delta(R_CHANGED),
            act(Kind.ADVANCE_BASE, remote=R_CHANGED),
        ),  # changed | changed to the same content
        (CHANGED, B, delta(R_CHANGED), act(Kind.MERGE, remote=R_CHANGED)),  # changed | changed
        (
            LocalState("h"),
            None,
            full(RemoteState("r", "h")),
            act(Kind.ADVANCE_BASE, remote=RemoteState("r", "h")),
        ),  # new | new, same hash
        (
            LocalState("h"),
            None,
            full(RemoteState("r", "other")),
            act(Kind.CONFLICT, remote=RemoteState("r", "other"), reason="new-on-both-sides"),
        ),  # new | new, other content
        (None, B, delta(R_TOMB), act(Kind.CLEAR_BASE)),  # deleted | deleted
        (
            None,
            None,
            full(R_CHANGED),
            act(Kind.DOWNLOAD, remote=R_CHANGED, reason="new-there"),
        ),  # absent, no base | present
        (CHANGED, None, full(None), act(Kind.UPLOAD)),  # present, no base | absent
        (CHANGED, None, delta(None), act(Kind.UPLOAD)),  # the same, in a delta
        (
            SAME,
            B,
            full(None),
            act(Kind.DELETE_LOCAL, reason="pull-delete"),
        ),  # synced & unchanged | expired
        (
            CHANGED,
            B,
            full(None),
            act(Kind.CONFLICT, reason="changed-here-expired-there"),
        ),  # changed | expired
        (None, B, full(None), act(Kind.CLEAR_BASE)),  # deleted | expired
        (None, None, full(R_TOMB), None),  # never had it, deleted there
        (None, None, delta(None), None),  # never had it, not listed
    ],
)
def test_every_row(
    local: LocalState | None,
    base: BaseView | None,
    remote: RemoteView,
    expected: Action | None,
) -> None:
    # The whole action: the backups are named after the reason, and a download or a
    # re-creation acts on the remote entry it carries.
    assert plan_note("n", local, base, remote) == expected


@pytest.mark.parametrize(
    ("local", "remote"),
    [(CHANGED, delta(None)), (SAME, delta(R_CHANGED)), (None, delta(None))],
)
def test_a_missing_base_copy_with_any_change_is_a_conflict(
    local: LocalState | None, remote: RemoteView
) -> None:
    action = plan_note("n", local, BaseView("rev-base", "hash-base", has_copy=False), remote)
    # A delta that leaves the note out stands for the base's own entry.
    entry = remote.entries.get("n", R_SAME)
    assert action == act(Kind.CONFLICT, remote=entry, reason="base-copy-missing")
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
    assert action == act(Kind.CLEAR_BASE)


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


def test_a_note_known_on_one_side_only_is_planned() -> None:
    local = {"mine": CHANGED}
    remote = RemoteView({"theirs": R_CHANGED}, full=True)
    actions = plan_sync(local, {"gone": B}, remote)
    assert [(action.id, action.kind) for action in actions] == [
        ("gone", Kind.CLEAR_BASE),  # in the base only: deleted here, expired there
        ("mine", Kind.UPLOAD),
        ("theirs", Kind.DOWNLOAD),
    ]


def test_a_note_left_alone_does_not_stop_the_pass() -> None:
    local = {"a": CHANGED, "b": CHANGED, "c": CHANGED}
    base = {"a": B, "b": B, "c": B}
    actions = plan_sync(local, base, delta(None), unsyncable={"a"}, conflicted={"b"})
    assert [(action.id, action.kind) for action in actions] == [("c", Kind.UPLOAD)]
