"""The backups the page lists and restores (spec 02.5, 11): this workspace's, newest fifty,
with a confirmation before replacing a newer version."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from oharness.errors import ConflictError
from oharness.memory.backup_list import backup_listing, restore_backup
from oharness.memory.workspace import Workspace


def _body(workspace: Workspace, note_id: str) -> str | None:
    stored = workspace.service.store("project").get(note_id)
    return stored.note.body if stored is not None else None


def test_newest_first_with_how_they_compare(workspace: Workspace) -> None:
    service = workspace.service
    note = service.remember("Deploys on Tuesdays", "At noon.\n")
    service.remember("Deploys on Tuesdays", "At two.\n", id=note.id)
    service.remember("Deploys on Tuesdays", "At three.\n", id=note.id)
    entries = backup_listing(service)
    assert [entry.note.body for entry in entries if entry.note] == ["At two.\n", "At noon.\n"]
    assert all(entry.scope == "project" and entry.replaces_newer for entry in entries)
    assert entries[0].record.reason == "remember-update"


def test_restoring_over_a_newer_version_needs_a_yes_and_backs_it_up(workspace: Workspace) -> None:
    service = workspace.service
    note = service.remember("Deploys on Tuesdays", "At noon.\n")
    service.remember("Deploys on Tuesdays", "At two.\n", id=note.id)
    old = backup_listing(service)[0]
    with pytest.raises(ConflictError, match="confirm") as refused:
        restore_backup(service, old.record.backup_id, confirmed=False)
    assert refused.value.details["reason"] == "replaces_newer"
    assert _body(workspace, note.id) == "At two.\n"  # unchanged
    result = restore_backup(service, old.record.backup_id, confirmed=True)
    assert result.changed and result.replaced_backup_id
    assert _body(workspace, note.id) == "At noon.\n"
    newest = backup_listing(service)[0]
    assert newest.record.reason == "restore-replace"
    assert newest.note is not None and newest.note.body == "At two.\n"


def test_a_deleted_note_restores_without_asking(workspace: Workspace) -> None:
    service = workspace.service
    note = service.remember("Deploys on Tuesdays", "At noon.\n")
    service.forget(note.id)
    entry = backup_listing(service)[0]
    assert entry.current == "absent" and not entry.replaces_newer
    restore_backup(service, entry.record.backup_id, confirmed=False)
    assert service.store("project").get(note.id) is not None


def test_only_this_workspaces_backups_and_at_most_the_limit(
    open_ws: Callable[..., Workspace], workspace: Workspace, tmp_path: Path
) -> None:
    other_root = tmp_path / "other"
    other_root.mkdir()
    other = open_ws(other_root)
    mine = workspace.service.remember("Mine", "one\n")
    theirs = other.service.remember("Theirs", "one\n")
    for n in range(3):
        workspace.service.remember("Mine", f"v{n}\n", id=mine.id)
        other.service.remember("Theirs", f"v{n}\n", id=theirs.id)
    listed = backup_listing(workspace.service)
    assert {entry.record.note_id for entry in listed} == {mine.id}
    assert len(backup_listing(workspace.service, limit=2)) == 2


def test_an_unreadable_backup_is_listed_not_restorable(workspace: Workspace) -> None:
    directory = workspace.home.backups_dir
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "1789000000000-broken-forget.md").write_text("not a note")
    entries = backup_listing(workspace.service)
    assert len(entries) == 1 and not entries[0].readable
