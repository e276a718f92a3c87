"""A note whose sync conflict waits is marked in every reader of memory, and only while it
waits: listing, search, read, the index (with its count) and the recall block."""

from __future__ import annotations

from pathlib import Path

from oharness.fsio import make_directory
from oharness.memory.tools import call_tool
from oharness.memory.workspace import Workspace, open_workspace


def _workspace(tmp_path: Path) -> tuple[Workspace, str, Path]:
    project = tmp_path / "project"
    project.mkdir()
    workspace = open_workspace(project, tmp_path / "home", register=True)
    service = workspace.service
    waiting = service.remember("The release train leaves on Mondays", "Every week at noon.")
    service.remember("The staging database is db-2", "Ask ops for access.")
    folder = workspace.home.conflicts_dir(
        service.scope_key("project"), service.store("project").directory
    )
    make_directory(folder)
    mark = folder / f"{waiting.id}.json"
    mark.write_text("{}", encoding="utf-8")  # its content is the sync engine's business
    return workspace, waiting.id, mark


def test_every_reader_marks_the_waiting_note_and_no_other(tmp_path: Path) -> None:
    workspace, note_id, _ = _workspace(tmp_path)
    service = workspace.service
    listing = call_tool(service, "memory", {})["notes"]
    assert {item["id"]: item.get("conflict") for item in listing}[note_id] == "waiting"
    assert [item["id"] for item in listing if "conflict" in item] == [note_id]
    hits = call_tool(service, "memory", {"query": "release train"})["results"]
    assert [hit.get("conflict") for hit in hits if hit["id"] == note_id] == ["waiting"]
    read = call_tool(service, "memory", {"id": note_id})
    assert read["conflict"] == "waiting" and "oharness sync resolve" in read["conflictHelp"]
    index = workspace.memory_index()
    assert f"({note_id}) [conflict waiting]" in index
    assert index.count("[conflict waiting]") == 2  # the line, and the count naming the marker
    assert "1 note has a sync conflict waiting" in index
    block = service.recall_preview("when does the release train leave").block
    assert f'<note id="{note_id}" scope="project" updated=' in block
    assert 'conflict="waiting">' in block and "the person resolves it" in block


def test_a_resolved_conflict_is_no_longer_marked(tmp_path: Path) -> None:
    workspace, note_id, mark = _workspace(tmp_path)
    service = workspace.service
    assert 'conflict="waiting"' in service.recall_preview("release train").block
    mark.unlink()
    assert 'conflict="waiting"' not in service.recall_preview("release train").block
    assert "conflict" not in workspace.memory_index().split("<memory-index>")[1]
    assert "conflict" not in call_tool(service, "memory", {"id": note_id})
