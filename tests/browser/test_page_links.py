"""Links and backups as a person meets them (issue 32): a link by the id without its hash or by
the exact summary opens its note, typing ``[[`` suggests ids, and a backup is previewed (its
text and a diff against the note now) before it is restored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from axe_support import serious_violations
from page_support import PageDaemon
from playwright.sync_api import Page, expect

from oharness.memory.workspace import open_workspace

_WIDTHS = (
    "Array.from(document.querySelectorAll('table.backups > thead th')).map(t => t.offsetWidth)"
)


def _column_widths(ui: Page) -> list[int]:
    widths: list[int] = ui.evaluate(_WIDTHS)
    return widths


def _remember(page_daemon: PageDaemon, summary: str, body: str, note_id: str | None = None) -> str:
    workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
    try:
        return workspace.service.remember(summary, body, id=note_id).id
    finally:
        workspace.close()


def test_links_by_stem_and_by_summary_resolve(ui: Page, page_daemon: PageDaemon) -> None:
    target = _remember(page_daemon, "Payments go through the adapter", "Always.\n")
    stem = target.rsplit("-", 1)[0]
    source = _remember(
        page_daemon, "Checkout flow", f"See [[{stem}]] and [[Payments go through the adapter]].\n"
    )
    ui.goto(f"/memory/notes?note=project:{source}")
    links = ui.locator(".links-out li")
    expect(links).to_have_count(2)  # both forms name the same note
    expect(links).to_contain_text(["Payments go through the adapter"] * 2)
    expect(ui.locator(".links-out .dangling")).to_have_count(0)
    links.first.get_by_role("link").click()
    expect(ui.locator("#note-title")).to_have_text("Payments go through the adapter")
    expect(ui.locator(".links-in")).to_contain_text("Checkout flow")


def test_typing_two_brackets_suggests_ids(
    ui: Page, page_daemon: PageDaemon, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    target = _remember(page_daemon, "Release train leaves on Thursday", "Every week.\n")
    ui.goto("/memory/notes?new=1")
    body = ui.locator("#note-body")
    body.click()
    body.press_sequentially("Ship it with the [[release tr")
    options = ui.locator("#note-link-suggestions [role=option]")
    expect(options.first).to_contain_text(target)
    screenshot(ui, "link-suggestions")
    ui.keyboard.press("Enter")
    expect(body).to_have_value(f"Ship it with the [[{target}]]")
    expect(ui.locator("#note-link-suggestions")).to_be_hidden()
    body.press_sequentially(" and [[nothing-like-this-exists")
    expect(options).to_have_count(0)


def test_a_backup_is_previewed_before_restore(
    ui: Page, page_daemon: PageDaemon, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    note = _remember(page_daemon, "Badge office hours", "Open 9 to 5.\nClosed on Fridays.\n")
    _remember(page_daemon, "Badge office hours", "Open 10 to 4.\nClosed on Fridays.\n", note)
    ui.goto("/memory/backups")
    row = ui.locator("table.backups tbody tr", has_text="Badge office hours").first
    widths = _column_widths(ui)
    row.get_by_role("button", name="Preview").click()
    preview = ui.locator(".backup-preview")
    expect(preview).to_be_visible()
    expect(preview.locator(".diff-removed")).to_contain_text("Open 10 to 4.")
    expect(preview.locator(".diff-added")).to_contain_text("Open 9 to 5.")
    expect(preview.locator(".diff-line:not(.diff-removed):not(.diff-added)")).to_contain_text(
        "Closed on Fridays."
    )
    after = _column_widths(ui)
    assert after == widths  # the preview takes its own row: no column is squeezed
    assert serious_violations(ui, "#backups-list") == []
    screenshot(ui, "backup-preview")
    row.get_by_role("button", name="Restore", exact=True).click()
    dialog = ui.get_by_role("alertdialog")
    expect(dialog).to_be_visible()
    expect(ui.locator(".backup-preview")).to_be_visible()  # the confirmation shows what comes back
    assert _column_widths(ui) == widths
    screenshot(ui, "backup-confirm")
