"""The limits table (spec 01.6) at its boundaries, through the library as the CLI and the
tools use it: a value at the limit is taken, one past it is refused with a clear error and
nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oharness.errors import LimitError, OHarnessError, ValidationError
from oharness.memory.workspace import Workspace, open_workspace
from oharness.notes.ids import MAX_SUMMARY_CHARS, MAX_TAG_CHARS, MAX_TAGS


def _workspace(tmp_path: Path, **memory: object) -> Workspace:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (home / "config.json").write_text(json.dumps({"memory": memory}), encoding="utf-8")
    return open_workspace(project, home, register=True)


def _files(workspace: Workspace) -> list[Path]:
    return sorted(workspace.service.store("project").directory.glob("*.md"))


def test_a_body_of_max_note_bytes_is_taken_and_one_byte_more_is_not(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, maxNoteBytes=1000)
    service = workspace.service
    service.remember("Exactly at the limit", "é" * 499 + "x")  # 1,000 bytes with the newline added
    before = _files(workspace)
    with pytest.raises(OHarnessError, match=r"1,?000"):
        service.remember("One byte over the limit", "é" * 500 + "x")
    assert _files(workspace) == before


def test_a_summary_of_the_maximum_length_is_taken_and_one_more_is_not(tmp_path: Path) -> None:
    service = _workspace(tmp_path).service
    service.remember("s" * MAX_SUMMARY_CHARS, "body")
    with pytest.raises(ValidationError):
        service.remember("t" * (MAX_SUMMARY_CHARS + 1), "body")


def test_tags_up_to_their_limits_are_taken_and_one_more_is_not(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    service = workspace.service
    many = [f"tag{n}" for n in range(MAX_TAGS)]
    saved = service.remember("Many tags", "body", tags=[*many[:-1], "t" * MAX_TAG_CHARS])
    before = _files(workspace)
    with pytest.raises(ValidationError, match=f"at most {MAX_TAGS}"):
        service.remember("Too many tags", "body", tags=[*many, "one-more"])
    with pytest.raises(ValidationError, match=f"at most {MAX_TAG_CHARS}"):
        service.remember("A long tag", "body", tags=["t" * (MAX_TAG_CHARS + 1)])
    with pytest.raises(ValidationError):
        service.remember("Many tags", "body", tags=[*many, "one-more"], id=saved.id)
    assert _files(workspace) == before


def test_a_scope_fills_to_max_notes_and_then_refuses_new_notes_only(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, maxNotes=3)
    service = workspace.service
    ids = [service.remember(f"Fact number {n}", f"Body {n}.").id for n in range(3)]
    with pytest.raises(LimitError):
        service.remember("A fourth fact", "Refused.")
    assert len(_files(workspace)) == 3
    service.remember("Fact number 0", "Updated body.", id=ids[0])  # an update still works
    service.forget(ids[1])
    service.remember("A fourth fact", "Now there is room.")
    assert len(_files(workspace)) == 3


def test_recall_attaches_at_most_per_turn_notes(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, recall={"perTurn": 2, "minScore": 0.01})
    service = workspace.service
    for n in range(4):
        service.remember(f"Kafka consumer lag alert {n}", f"Kafka consumer lag runbook {n}.")
    block = service.recall_preview("kafka consumer lag alert runbook").block
    assert block.count("<note id=") == 2
