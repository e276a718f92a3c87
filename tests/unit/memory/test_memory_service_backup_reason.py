"""An update through the memory service can back up the replaced version with a reason."""

from __future__ import annotations

from oharness.memory.workspace import Workspace


def test_an_update_with_a_backup_reason_saves_the_replaced_version_first(
    workspace: Workspace,
) -> None:
    service = workspace.service
    saved = service.remember("Release train leaves on Tuesdays", "Every Tuesday at noon.")
    before = service.store("project").read_bytes(saved.id)
    service.remember(
        "Release train leaves on Tuesdays",
        "Every Tuesday at 14:00 now.",
        id=saved.id,
        backup_reason="extract-update",
    )
    [record] = service.backups().recent()
    assert record.reason == "extract-update" and record.note_id == saved.id
    assert service.backups().read_bytes(record) == before
    assert "14:00" in service.read(saved.id).body


def test_an_update_that_changes_nothing_writes_no_backup(workspace: Workspace) -> None:
    service = workspace.service
    saved = service.remember("Release train leaves on Tuesdays", "Every Tuesday at noon.")
    service.remember(
        "Release train leaves on Tuesdays",
        "Every Tuesday at noon.",
        id=saved.id,
        backup_reason="extract-update",
    )
    assert service.backups().recent() == []
