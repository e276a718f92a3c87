"""Merging notes (spec 05.2) with sync off: plan, drafts, stale plans, links, backups."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from oharness.errors import ConflictError, LimitError, NotFoundError, SecretError, ValidationError
from oharness.memory.workspace import Workspace
from oharness.notes.format import parse_note
from oharness.review import open_review
from oharness.review.merge import MergeDraft, draft_file_text, draft_from_file_text, plan_from_dict

if TYPE_CHECKING:
    from conftest import FakeClock


def _three(workspace: Workspace) -> tuple[str, str, str]:
    s = workspace.service
    a = s.remember("Pricing cards use fills, not borders", "Fills since May.", tags="design")
    b = s.remember("Pricing cards: fill instead of borders", "No borders.", tags="design, cards")
    c = s.remember("Pricing uses filled cards", f"Also see [[{a.id}]].", tags="pricing")
    return a.id, b.id, c.id


def test_merge_keeps_the_oldest_id_deletes_the_rest_and_backs_up(
    workspace: Workspace, clock: FakeClock
) -> None:
    a, b, c = _three(workspace)
    review = open_review(workspace, clock=clock)
    plan = review.plan([c, b, a])
    assert plan.keep == a and set(plan.delete) == {b, c}
    assert set(plan.hashes) == {a, b, c}
    draft = review.draft(plan)
    assert draft.source == "concat"
    for text in ("Fills since May.", "No borders.", "Pricing cards: fill instead of borders"):
        assert text in draft.body
    assert draft.tags == ("design", "cards", "pricing")
    result = review.apply(plan, draft)
    store = workspace.service.store("project")
    store.refresh(full=True)
    assert [n.id for n in store.notes()] == [a]
    kept = store.get(a)
    assert kept is not None and "No borders." in kept.note.body
    backups = workspace.service.backups().recent()
    assert sorted(str(r.note_id) for r in backups if r.reason == "merge") == sorted([a, b, c])
    assert len(result.backups) == 3
    # the merged body's own link to a deleted note, and c's link to a, point at the kept note
    assert f"[[{b}]]" not in kept.note.body and f"[[{c}]]" not in kept.note.body


def test_links_to_deleted_notes_are_pointed_at_the_kept_one(
    workspace: Workspace, clock: FakeClock
) -> None:
    a, b, _ = _three(workspace)
    s = workspace.service
    other = s.remember("Card styling index", f"See [[{b}]] and [[{b}]] and [[{a}]].")
    user_note = s.remember("My own list", f"Project note [[{b}]].", scope="user")
    review = open_review(workspace, clock=clock)
    plan = review.plan([a, b])
    assert plan.relink == (other.id,)
    result = review.apply(plan, review.draft(plan))
    assert result.relinked == (other.id,)
    body = s.read(other.id).to_dict()["body"]
    assert f"[[{b}]]" not in body and body.count(f"[[{a}]]") == 3
    # only the scope of the merge is rewritten
    assert f"[[{b}]]" in s.read(user_note.id).to_dict()["body"]
    assert any(r.note_id == other.id and r.reason == "merge" for r in s.backups().recent())


def test_a_stale_plan_is_refused_and_nothing_changes(
    workspace: Workspace, clock: FakeClock
) -> None:
    a, b, _ = _three(workspace)
    review = open_review(workspace, clock=clock)
    plan = review.plan([a, b])
    draft = review.draft(plan)
    workspace.service.remember("Pricing cards: fill instead of borders", "Edited.", id=b)
    before = {p.name: p.read_bytes() for p in workspace.project.memory_dir.iterdir()}  # type: ignore[union-attr]
    with pytest.raises(ConflictError, match=f"{b} changed"):
        review.apply(plan, draft)
    after = {p.name: p.read_bytes() for p in workspace.project.memory_dir.iterdir()}  # type: ignore[union-attr]
    assert before == after
    assert not [r for r in workspace.service.backups().recent() if r.reason == "merge"]


def test_a_plan_survives_json_and_a_deleted_note_makes_it_stale(
    workspace: Workspace, clock: FakeClock
) -> None:
    a, b, _ = _three(workspace)
    review = open_review(workspace, clock=clock)
    plan = plan_from_dict(json.loads(json.dumps(review.plan([a, b]).to_dict())))
    workspace.service.forget(b)
    with pytest.raises(ConflictError, match="disappeared"):
        review.draft(plan)
    with pytest.raises(ValidationError):
        plan_from_dict({"scope": "elsewhere"})


def test_merge_needs_two_notes_of_one_scope(workspace: Workspace, clock: FakeClock) -> None:
    a, _, _ = _three(workspace)
    mine = workspace.service.remember("A user note", "Body.", scope="user")
    review = open_review(workspace, clock=clock)
    with pytest.raises(ValidationError, match="two different"):
        review.plan([a, a])
    with pytest.raises(NotFoundError, match="one scope"):
        review.plan([a, mine.id])
    with pytest.raises(NotFoundError):
        review.plan([a, "no-such-note"], scope="project")


def test_the_merged_body_must_fit_the_note_limit(workspace: Workspace, clock: FakeClock) -> None:
    a, b, _ = _three(workspace)
    review = open_review(workspace, clock=clock)
    plan = review.plan([a, b])
    big = MergeDraft("Merged", "x" * 200_000 + "\n")
    with pytest.raises(LimitError):
        review.apply(plan, big)
    with pytest.raises(SecretError):
        review.apply(plan, MergeDraft("Merged", "key AKIAIOSFODNN7EXAMPLF here\n"))
    assert len(workspace.service.store("project").notes()) == 3


def test_an_edited_draft_keeps_the_kept_id(workspace: Workspace, clock: FakeClock) -> None:
    a, b, _ = _three(workspace)
    review = open_review(workspace, clock=clock)
    plan = review.plan([a, b])
    notes = {n.id: n.note for n in workspace.service.store("project").notes()}
    text = draft_file_text(plan, review.draft(plan), notes)
    edited = draft_from_file_text(plan, text.replace("Fills since May.", "Fills, by hand."))
    assert edited.source == "edited"
    review.apply(plan, edited)
    assert "Fills, by hand." in workspace.service.read(a).to_dict()["body"]
    with pytest.raises(ValidationError, match="keeps"):
        draft_from_file_text(plan, text.replace(f'"id":"{a}"', '"id":"renamed-1"'))


def test_the_kept_note_takes_the_earliest_created_at(
    workspace: Workspace, clock: FakeClock
) -> None:
    a, b, _ = _three(workspace)
    review = open_review(workspace, clock=clock)
    created = parse_note(workspace.service.store("project").get(a).path.read_text()).created_at  # type: ignore[union-attr]
    plan = review.plan([b, a])
    review.apply(plan, review.draft(plan))
    note = parse_note(workspace.service.store("project").get(a).path.read_text())  # type: ignore[union-attr]
    assert note.created_at == created and note.updated_at > created
