"""A new process starting from a current recall cache reads only the notes it needs (03.3)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oharness.memory.attach import recall_for_message
from oharness.memory.scope_recall import MemoryRecall
from oharness.memory.workspace import Workspace
from oharness.notes import note_cache
from oharness.notes.format import Note, parse_note, parse_note_bytes, serialise_note

OpenWorkspace = Callable[..., Workspace]
MESSAGE = "How many gears does the widget number 7 gearbox have?"


def _recall(workspace: Workspace) -> MemoryRecall:
    assert workspace.service.recall is not None
    return workspace.service.recall


@pytest.fixture
def cached(open_ws: OpenWorkspace) -> dict[str, str]:
    """Forty notes and a recall cache written by an earlier process; ids by number."""
    workspace = open_ws()
    ids = {
        str(number): workspace.service.remember(
            f"Widget number {number} gearbox has {number + 3} gears",
            f"Measured on the bench; see [[widget-index]] for the others ({number}).",
            tags=f"widget gearbox w{number}",
        ).id
        for number in range(40)
    }
    earlier = open_ws()
    _recall(earlier).index()
    earlier.close()
    return ids


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def counting(data: bytes, **kwargs: Any) -> Note:
        note = parse_note_bytes(data, **kwargs)
        seen.append(note.id)
        return note

    monkeypatch.setattr(note_cache, "parse_note_bytes", counting)
    return seen


def test_recall_from_a_current_cache_reads_only_the_attached_notes(
    open_ws: OpenWorkspace, cached: dict[str, str], parsed: list[str]
) -> None:
    workspace = open_ws()
    outcome = recall_for_message(_recall(workspace), MESSAGE, record=False)
    attached = [note.id for note in outcome.attached]
    assert attached[:1] == [cached["7"]]
    assert set(parsed) <= set(attached) and cached["7"] in parsed
    parsed.clear()
    full = open_ws()
    full.service.all_notes()  # every file read first, as before
    again = recall_for_message(_recall(full), MESSAGE, record=False)
    assert again.block == outcome.block and again.attached == outcome.attached


def test_a_note_edited_after_the_cache_is_indexed_as_it_is_now(
    open_ws: OpenWorkspace, cached: dict[str, str], project_dir: Path
) -> None:
    path = project_dir / "MEMORY" / f"{cached['12']}.md"
    note = parse_note(path.read_text(encoding="utf-8"))
    path.write_text(serialise_note(note.with_changes(summary="Sprocket tension is 12 newtons")))
    workspace = open_ws()
    hits = workspace.service.search("sprocket tension newtons")
    assert hits and hits[0].id == cached["12"]
    assert hits[0].summary == "Sprocket tension is 12 newtons"


def test_a_note_removed_after_the_index_was_built_is_never_attached(
    open_ws: OpenWorkspace, cached: dict[str, str], project_dir: Path
) -> None:
    workspace = open_ws()
    recall = _recall(workspace)
    recall.index()  # from the cache: no note read yet
    (project_dir / "MEMORY" / f"{cached['7']}.md").unlink()
    outcome = recall_for_message(recall, MESSAGE, record=False)
    assert cached["7"] not in [note.id for note in outcome.attached]
    assert cached["7"] not in [hit.id for hit in workspace.service.search("widget number 7")]
