"""A conflict as the page shows it: three versions, field and line diffs, a merge attempt, and
a hand merge checked like remember (spec 07.3, 11)."""

from __future__ import annotations

import pytest

from oharness.errors import LimitError, SecretError, ValidationError
from oharness.memory.workspace import Workspace
from oharness.merge.text import merge_text, merge_text_marked
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.sync.conflict_view import conflict_view, hand_merged_text, merge_attempt
from oharness.sync.conflicts import ConflictRecord

BASE_BODY = "alpha\nbravo\ncharlie\ndelta\necho\n"


def _text(note_id: str, summary: str, body: str, **fields: object) -> str:
    note = Note(note_id, summary, body, created_at=1, updated_at=2, **fields)  # type: ignore[arg-type]
    return serialise_note_bytes(note).decode("utf-8")


def _view(workspace: Workspace, local: str | None, cloud: str | None, base: str | None):
    stored = workspace.service.remember("Deploy steps", BASE_BODY, tags=["ops"])
    note_id, store = stored.id, workspace.service.store("project")
    if local is None:
        store.delete(note_id)
    else:
        store.save_bytes(note_id, local.replace("@ID", note_id).encode(), create=False)
    record = ConflictRecord(
        id=note_id,
        reason="merge-conflict",
        created_at=5,
        base=base.replace("@ID", note_id) if base else None,
        local=None,
        cloud=cloud.replace("@ID", note_id) if cloud else None,
        cloud_rev="r1" if cloud else None,
        cloud_hash=None,
    )
    return conflict_view(record, "project", store)


def test_fields_show_what_each_side_changed(workspace: Workspace) -> None:
    base = _text("@ID", "Deploy steps", BASE_BODY, tags=("ops",))
    local = _text("@ID", "Deploy steps (here)", BASE_BODY, tags=("ops", "here"), type="project")
    cloud = _text("@ID", "Deploy steps (cloud)", BASE_BODY, tags=("cloud",))
    view = _view(workspace, local, cloud, base)
    rows = {row.name: row for row in view.fields}
    assert rows["summary"].local == "Deploy steps (here)" and rows["summary"].cloud_changed
    assert rows["summary"].differs
    assert rows["type"].local_changed and not rows["type"].cloud_changed
    assert rows["tags"].local == "ops, here" and rows["tags"].cloud == "cloud"
    # The attempt: the type only this machine changed is taken; the summary needs a choice;
    # tags merge as sets (ops removed by the cloud, each side's addition kept).
    assert view.attempt.type == "project"
    assert view.attempt.open == ("summary",)
    assert view.attempt.summary == "Deploy steps (here)"
    assert view.attempt.tags == ("here", "cloud")


def test_body_rows_align_both_sides_and_mark_what_is_new_since_the_base(
    workspace: Workspace,
) -> None:
    base = _text("@ID", "Deploy steps", BASE_BODY)
    local = _text("@ID", "Deploy steps", "alpha\nbravo HERE\ncharlie\ndelta\necho\nfoxtrot\n")
    cloud = _text("@ID", "Deploy steps", "alpha\nbravo CLOUD\ncharlie\ndelta\necho\n")
    view = _view(workspace, local, cloud, base)
    kinds = [(row.kind, row.local, row.cloud) for row in view.rows]
    assert kinds[0] == ("same", "alpha", "alpha")
    assert kinds[1] == ("changed", "bravo HERE", "bravo CLOUD")
    assert kinds[-1] == ("local-only", "foxtrot", None)
    changed = view.rows[1]
    assert changed.local_new and changed.cloud_new and changed.local_no == 2
    assert not view.rows[0].local_new
    assert view.rows[-1].local_new and view.rows[-1].cloud_no is None


def test_the_merge_attempt_merges_what_it_can_and_marks_the_rest(workspace: Workspace) -> None:
    base = _text("@ID", "Deploy steps", BASE_BODY)
    local = _text("@ID", "Deploy steps", "alpha\nbravo HERE\ncharlie\ndelta\necho\n")
    cloud = _text("@ID", "Deploy steps", "alpha\nbravo CLOUD\ncharlie\ndelta\necho CLOUD\n")
    view = _view(workspace, local, cloud, base)
    body = view.attempt.body
    assert view.attempt.open == ("body",)
    assert body == (
        "alpha\n<<<<<<< this machine\nbravo HERE\n=======\nbravo CLOUD\n>>>>>>> cloud\n"
        "charlie\ndelta\necho CLOUD\n"
    )


def test_a_clean_merge_needs_no_choice() -> None:
    assert merge_text_marked("a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n", ("x", "y")) == merge_text(
        "a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n"
    )


def test_a_side_deleted_keeps_the_other_text(workspace: Workspace) -> None:
    base = _text("@ID", "Deploy steps", BASE_BODY)
    cloud = _text("@ID", "Deploy steps", BASE_BODY + "more\n")
    view = _view(workspace, None, cloud, base)
    assert view.local.missing == "deleted"
    assert view.attempt.body == BASE_BODY + "more\n" and view.attempt.open == ("deleted",)
    assert all(row.kind == "cloud-only" for row in view.rows)


def test_a_never_synced_pair_has_no_base(workspace: Workspace) -> None:
    local = _text("@ID", "Deploy steps", "one\n")
    cloud = _text("@ID", "Deploy steps", "two\n")
    view = _view(workspace, local, cloud, None)
    assert view.base.note is None and view.base.missing is None
    assert "<<<<<<< this machine\none\n=======\ntwo\n>>>>>>> cloud" in view.attempt.body


def test_an_unreadable_version_is_named(workspace: Workspace) -> None:
    view = _view(workspace, _text("@ID", "Deploy steps", "one\n"), "not a note", None)
    assert view.cloud.missing == "unreadable"
    assert merge_attempt(view.base, view.local, view.cloud).body == "one\n"


def test_a_hand_merge_is_checked_like_remember(workspace: Workspace) -> None:
    base = _text("@ID", "Deploy steps", BASE_BODY)
    view = _view(workspace, _text("@ID", "Here", "x\n"), _text("@ID", "Cloud", "y\n"), base)
    text = hand_merged_text(
        view, summary=" Both ", type="project", tags="A, b", body="x\ny", max_note_bytes=1000
    )
    saved = parse_note_bytes(text.encode())
    assert (saved.summary, saved.type, saved.tags, saved.body) == (
        "Both",
        "project",
        ("a", "b"),
        "x\ny\n",
    )
    assert saved.id == view.id
    with pytest.raises(ValidationError) as refused:
        hand_merged_text(view, summary="", type=None, tags="", body="x", max_note_bytes=1000)
    assert refused.value.details["field"] == "summary"
    with pytest.raises(ValidationError) as refused:
        hand_merged_text(view, summary="s", type="bogus", tags="", body="x", max_note_bytes=1000)
    assert refused.value.details["field"] == "type"
    with pytest.raises(LimitError) as too_long:
        hand_merged_text(
            view, summary="s", type=None, tags="", body="x" * 2000, max_note_bytes=1000
        )
    assert too_long.value.details["field"] == "body"
    with pytest.raises(ValidationError, match="conflict markers") as refused:
        hand_merged_text(
            view, summary="s", type=None, tags="", body=view.attempt.body, max_note_bytes=1000
        )
    assert refused.value.details["field"] == "body"
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    with pytest.raises(SecretError) as refused:
        hand_merged_text(
            view, summary="s", type=None, tags="", body=f"key {key}\n", max_note_bytes=1000
        )
    assert refused.value.details["field"] == "body"


def test_a_setext_heading_is_not_a_marker(workspace: Workspace) -> None:
    view = _view(workspace, _text("@ID", "Here", "x\n"), _text("@ID", "Cloud", "y\n"), None)
    text = hand_merged_text(
        view, summary="s", type=None, tags="", body="Title\n=======\n", max_note_bytes=1000
    )
    assert parse_note_bytes(text.encode()).body == "Title\n=======\n"
