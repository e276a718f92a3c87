"""An update through the memory service can back up the replaced version with a reason."""

from __future__ import annotations

import pytest

from oharness.errors import ConflictError
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


def test_an_update_made_to_a_version_the_file_no_longer_holds_is_refused(
    workspace: Workspace,
) -> None:
    # An editor (the Memory page) opened hash H; the file was then rewritten in place by
    # hand. The check reads the file under the lock, not the cache, which may not know yet.
    service = workspace.service
    saved = service.remember("Release train leaves on Tuesdays", "Every Tuesday at noon.")
    opened = service.find(saved.id).note.content_hash
    path = service.store("project").path_for(saved.id)
    with path.open("r+", encoding="utf-8") as handle:  # same file, same size class: in place
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace("noon", "one!"))
    with pytest.raises(ConflictError, match="changed since it was opened") as refused:
        service.remember(
            "Release train leaves on Tuesdays", "My edit.", id=saved.id, expected_hash=opened
        )
    assert refused.value.details.get("reason") == "changed"
    assert "one!" in path.read_text(encoding="utf-8") and service.backups().recent() == []
    hand = service.store("project").latest(saved.id)
    assert hand is not None
    service.remember("Release train", "My edit.", id=saved.id, expected_hash=hand.note.content_hash)
    assert service.read(saved.id).body == "My edit.\n"
