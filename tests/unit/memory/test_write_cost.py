"""Writes through the service read the folder once, yet build on what is on disk now."""

from __future__ import annotations

from pathlib import Path

import pytest

from oharness.memory.workspace import Workspace, open_workspace
from oharness.notes import note_cache
from oharness.notes.format import parse_note_bytes, serialise_note_bytes


def _recalled_ids(workspace: Workspace, query: str) -> list[str]:
    return [hit.id for hit in workspace.service.search(query, 20)]


def test_an_update_builds_on_a_persons_in_place_edit(workspace: Workspace) -> None:
    service = workspace.service
    result = service.remember("Deploys happen on Tuesdays", "Noon.", tags="release")
    path = Path(result.path)
    service.listing()  # loaded and cached
    edited = parse_note_bytes(path.read_bytes()).with_changes(tags=("release", "edited"))
    with path.open("r+b") as handle:  # an editor saving in place: the folder does not change
        handle.write(serialise_note_bytes(edited))
        handle.truncate()
    service.remember("Deploys happen on Tuesdays", "Two o'clock.", id=result.id)
    saved = parse_note_bytes(path.read_bytes())
    assert saved.tags == ("release", "edited") and saved.body == "Two o'clock.\n"
    backup = service.recent_backups(1)[0]
    kept = parse_note_bytes(service.backups().read_bytes(backup))
    assert kept.tags == ("release", "edited") and kept.body == "Noon.\n"


def test_search_follows_this_process_writes_and_forgets(workspace: Workspace) -> None:
    service = workspace.service
    first = service.remember("Kelvotrabi pipeline notes", "The kelvotrabi runs nightly.").id
    assert _recalled_ids(workspace, "kelvotrabi") == [first]
    second = service.remember("Kelvotrabi retries", "Kelvotrabi retries three times.").id
    assert sorted(_recalled_ids(workspace, "kelvotrabi")) == sorted([first, second])
    service.remember("Zumbrelic retries", "Zumbrelic retries three times.", id=second)
    assert _recalled_ids(workspace, "kelvotrabi") == [first]
    service.forget(first)
    assert _recalled_ids(workspace, "kelvotrabi") == []


def test_search_is_whole_after_more_writes_than_the_journal_holds(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = workspace.service
    _recalled_ids(workspace, "warm")  # the index exists before the writes
    monkeypatch.setattr(note_cache, "_JOURNAL_MAX", 3)
    ids = [service.remember(f"Vopalint note {n}", f"Vopalint body {n}.").id for n in range(8)]
    assert sorted(_recalled_ids(workspace, "vopalint")) == sorted(ids)


@pytest.mark.parametrize(("minutes_later", "removed"), [(1, False), (60, True)])
def test_the_stores_judge_temp_files_by_the_workspaces_clock(
    tmp_path: Path, minutes_later: int, removed: bool
) -> None:
    """The stores judge file times by the workspace's file clock (no hidden time.time)."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    temp = home / "memory" / "user" / ".left-behind.md.0123456789ab.tmp"
    temp.parent.mkdir(parents=True)
    temp.write_bytes(b"half a note")
    written_ms = temp.stat().st_mtime_ns // 1_000_000
    now = written_ms + minutes_later * 60_000
    workspace = open_workspace(project, home, register=True, file_clock=lambda: now)
    workspace.service.remember("A user note", "Body.", scope="user")
    assert temp.exists() is not removed
