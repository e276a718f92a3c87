"""Backups in a real browser: the fifty newest with when and why, a restore over a newer
version only after a confirmation, the replaced version backed up, a deleted note restored
at once (spec 11, 02.5)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from axe_support import fits_width, serious_violations, tab_to
from page_support import PageDaemon
from playwright.sync_api import Page, expect

from oharness.memory.workspace import Workspace, open_workspace


def _workspace(page_daemon: PageDaemon) -> Workspace:
    return open_workspace(page_daemon.project, page_daemon.home, register=False)


def _body(page_daemon: PageDaemon, note_id: str) -> str | None:
    workspace = _workspace(page_daemon)
    try:
        stored = workspace.service.store("project").get(note_id)
        return stored.note.body if stored is not None else None
    finally:
        workspace.close()


def test_restore_over_a_newer_version_asks_first(ui: Page, page_daemon: PageDaemon) -> None:
    workspace = _workspace(page_daemon)
    try:
        note = workspace.service.remember("Office wifi name", "It is Hall-5G.\n")
        workspace.service.remember("Office wifi name", "It is Hall-6G.\n", id=note.id)
        workspace.service.remember("Office wifi name", "It is Atrium.\n", id=note.id)
        oldest = next(
            record
            for record in workspace.service.backups().recent()
            if record.note_id == note.id and b"Hall-5G" in record.path.read_bytes()
        )
    finally:
        workspace.close()
    ui.goto("/memory/backups")
    row = ui.locator(f"#backup-{oldest.backup_id}")
    expect(row).to_contain_text("replaced by remember")
    expect(row).to_contain_text("Office wifi name")
    expect(row).to_contain_text("a newer version")
    row.get_by_role("button", name="Restore").click()
    dialog = ui.get_by_role("alertdialog")
    expect(dialog).to_contain_text("was changed after this backup")
    assert _body(page_daemon, note.id) == "It is Atrium.\n"  # asking changed nothing
    dialog.get_by_role("button", name="Cancel").click()
    expect(ui.get_by_role("alertdialog")).to_have_count(0)
    row.get_by_role("button", name="Restore").click()
    ui.get_by_role("alertdialog").get_by_role("button", name="Restore anyway").click()
    expect(ui.locator("#backups-outcome")).to_contain_text(
        "the version it replaced is backed up as"
    )
    assert _body(page_daemon, note.id) == "It is Hall-5G.\n"
    first = ui.locator("table.backups tbody tr").first
    expect(first).to_contain_text("replaced by a restore")
    expect(first).to_contain_text("Office wifi name")


def test_a_deleted_note_is_restored_without_asking(ui: Page, page_daemon: PageDaemon) -> None:
    workspace = _workspace(page_daemon)
    try:
        note = workspace.service.remember("Parking is on level two", "Spots 20 to 30.\n")
        record = workspace.service.forget(note.id)
    finally:
        workspace.close()
    ui.goto("/memory/backups")
    row = ui.locator(f"#backup-{record.backup_id}")
    expect(row).to_contain_text("forgotten")
    expect(row).to_contain_text("deleted")
    row.get_by_role("button", name="Restore").click()
    expect(ui.locator("#backups-outcome")).to_contain_text(f"Restored {note.id}.")
    assert _body(page_daemon, note.id) == "Spots 20 to 30.\n"


def test_the_fifty_newest(ui: Page, page_daemon: PageDaemon) -> None:
    workspace = _workspace(page_daemon)
    try:
        note = workspace.service.remember("Counter", "0\n")
        for n in range(1, 56):
            workspace.service.remember("Counter", f"{n}\n", id=note.id)
    finally:
        workspace.close()
    ui.goto("/memory/backups")
    rows = ui.locator("table.backups tbody tr")
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text("Counter")


def test_keyboard_zh_cn_axe_and_360px(
    ui: Page, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    ui.goto("/memory/backups?lang=zh-CN")
    expect(ui.get_by_role("heading", level=2)).to_have_text("备份")
    expect(ui.get_by_role("button", name="恢复").first).to_be_visible()
    ui.goto("/memory/backups")
    assert serious_violations(ui, "#section-backups") == []
    assert fits_width(ui, 360)
    screenshot(ui, "backups")
    ui.set_viewport_size({"width": 1280, "height": 900})
    tab_to(ui, "table.backups button >> nth=0")
