"""Rendered note blocks kept per version (spec 03.2): the same block as rendering afresh, a
note's own edit or a linked note's new summary shown at once, credentials never let through."""

from __future__ import annotations

import os
from typing import Any

import pytest

from oharness.memory import attach
from oharness.memory.attach import BlockCache, build_block, recall_for_message, render_note
from oharness.memory.scope_recall import MemoryRecall
from oharness.memory.workspace import Workspace
from oharness.notes.format import serialise_note
from oharness.notes.secrets import redact_for_model
from oharness.notes.store import StoredNote

MESSAGE = "how do the billing webhooks retry?"


def _recall(workspace: Workspace) -> MemoryRecall:
    assert workspace.service.recall is not None
    return workspace.service.recall


def _seed(workspace: Workspace) -> tuple[str, str]:
    service = workspace.service
    dashboards = service.remember("Dashboards live in Grafana", "Folder ops.").id
    billing = service.remember(
        "Billing webhooks retry with exponential backoff",
        f"Five tries, doubling from one second; see [[{dashboards}]].",
        tags="billing, webhooks",
    ).id
    return billing, dashboards


def _stored(workspace: Workspace, note_id: str) -> StoredNote:
    found = workspace.service.store("project").get(note_id)
    assert found is not None
    return found


def _edit_on_disk(workspace: Workspace, note_id: str, **changes: Any) -> None:
    """Rewrite a note's file the way an editor would (not through the store)."""
    stored = _stored(workspace, note_id)
    temporary = stored.path.with_name(stored.path.name + ".edit")
    temporary.write_text(serialise_note(stored.note.with_changes(**changes)), encoding="utf-8")
    os.replace(temporary, stored.path)


def test_the_cached_block_is_the_block_rendered_afresh(workspace: Workspace) -> None:
    billing, _ = _seed(workspace)
    recall = _recall(workspace)
    stored = _stored(workspace, billing)
    cache = BlockCache()
    for room in (None, 0, 10, 40, 1000):
        first = cache.render(stored, room, recall.summary_of)
        assert first == render_note(stored, room, recall.summary_of)
        assert cache.render(stored, room, recall.summary_of) == first
    found = [(stored, 1.0)]
    for budget in (50, 300, 4000):
        cached = build_block(found, budget, recall.summary_of, cache)
        assert cached == build_block(found, budget, recall.summary_of)


def test_a_note_attached_again_is_not_scanned_again(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(workspace)
    recall = _recall(workspace)
    scans: list[str] = []
    real = redact_for_model

    def counted(text: str) -> str:
        scans.append(text)
        return real(text)

    monkeypatch.setattr(attach, "redact_for_model", counted)
    first = recall_for_message(recall, MESSAGE, record=False)
    assert first.attached and scans
    scanned = len(scans)
    again = recall_for_message(recall, MESSAGE, record=False)
    assert again == first
    assert len(scans) == scanned


def test_an_edit_on_disk_shows_in_the_next_block_with_credentials_removed(
    workspace: Workspace,
) -> None:
    billing, _ = _seed(workspace)
    recall = _recall(workspace)
    before = recall_for_message(recall, MESSAGE, record=False)
    assert "Five tries" in before.block
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    _edit_on_disk(workspace, billing, body=f"Seven tries now. Token {key} for the retry bot.\n")
    after = recall_for_message(recall, MESSAGE, record=False)
    assert "Seven tries now." in after.block and "Five tries" not in after.block
    assert key not in after.block and "[credential removed]" in after.block


def test_a_linked_note_renamed_shows_its_new_summary(workspace: Workspace) -> None:
    _, dashboards = _seed(workspace)
    recall = _recall(workspace)
    assert "Dashboards live in Grafana" in recall_for_message(recall, MESSAGE, record=False).block
    _edit_on_disk(workspace, dashboards, summary="Dashboards moved to Perses")
    after = recall_for_message(recall, MESSAGE, record=False)
    assert "Dashboards moved to Perses" in after.block
    assert "Grafana" not in after.block
    assert after.linked[0]["summary"] == "Dashboards moved to Perses"


def test_the_cache_keeps_at_most_its_size(workspace: Workspace) -> None:
    billing, dashboards = _seed(workspace)
    recall = _recall(workspace)
    cache = BlockCache(size=2)
    notes = [_stored(workspace, billing), _stored(workspace, dashboards)]
    for room in (None, 0, 5, 9):
        for stored in notes:
            cache.render(stored, room, recall.summary_of)
    assert len(cache) == 2
