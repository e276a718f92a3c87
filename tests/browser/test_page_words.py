"""Every word of the page right in both languages (issue 32): nothing English reaches the
zh-CN page, no "1 notes" on the English one, the language link readable without a CJK font,
and no request fails on any page load (the favicon included)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from page_support import PageDaemon
from playwright.sync_api import Page, Response, expect
from words_support import english_in, own_words, plural_errors

from oharness.memory.workspace import open_workspace

SECTIONS = ("notes", "sync", "conflicts", "tidy", "backups", "graph")


@pytest.fixture(scope="module", autouse=True)
def more_to_say(page_daemon: PageDaemon) -> None:
    """Findings, backups and a recall, so every list has rows to word."""
    workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
    try:
        service = workspace.service
        long = service.remember("A very long note", "Long text. " * 900)
        edited = service.remember("Printer on the third floor", "It needs toner.\n")
        service.remember("Printer on the third floor", "It has toner again.\n", id=edited.id)
        service.remember("Stem link", f"See [[{edited.id.rsplit('-', 1)[0]}]].\n")
        assert long.id
        recall = service.recall
        assert recall is not None
        recall.record_usage([("project", edited.id)])
    finally:
        workspace.close()


def _loaded(ui: Page, path: str) -> None:
    """``path`` opened, its scripts run and its event stream connected."""
    ui.goto(path)
    expect(ui.locator("#live-state")).to_have_attribute("data-state", "live")


def _visit(ui: Page, path: str) -> list[str]:
    _loaded(ui, path)
    return own_words(ui)


def _every_view(ui: Page, page_daemon: PageDaemon, lang: str) -> dict[str, list[str]]:
    """Every section, an open note, both forms, a refusal, a backup preview, a sync refusal."""
    query = f"lang={lang}"
    said = {section: _visit(ui, f"/memory/{section}?{query}") for section in SECTIONS}
    note = page_daemon.ids["Deploys go through the staging cluster first"]
    said["note"] = _visit(ui, f"/memory/notes?{query}&note={note}")
    said["edit"] = _visit(ui, f"/memory/notes?{query}&note={note}&edit=1")
    said["new"] = _visit(ui, f"/memory/notes?{query}&new=1")
    ui.locator("#note-summary").fill("two\u202elines")
    ui.locator("#note-form button[type=submit]").click()
    expect(ui.locator("#note-summary-error")).to_be_visible()
    said["refusal"] = own_words(ui)
    ui.goto(f"/memory/backups?{query}")
    ui.locator("td.backup-actions button").first.click()
    expect(ui.locator(".backup-preview")).to_be_visible()
    said["preview"] = own_words(ui)
    ui.goto(f"/memory/sync?{query}")
    ui.locator("#sync-now").click()
    expect(ui.locator("#sync-outcome .outcome")).to_be_visible()
    said["sync-now"] = own_words(ui)
    return said


def test_no_english_reaches_the_chinese_page(ui: Page, page_daemon: PageDaemon, screenshot) -> None:
    said = _every_view(ui, page_daemon, "zh-CN")
    leaks = {view: english_in(texts) for view, texts in said.items() if english_in(texts)}
    assert leaks == {}
    assert "待整理" in " ".join(said["tidy"])  # the check reads the page's words at all
    assert any("没有这个文件" in text or "链接到" in text for text in said["tidy"])
    screenshot(ui, "words-zh-sync")


def test_the_english_page_has_no_plural_errors(ui: Page, page_daemon: PageDaemon) -> None:
    said = _every_view(ui, page_daemon, "en")
    errors = {view: plural_errors(texts) for view, texts in said.items() if plural_errors(texts)}
    assert errors == {}
    assert plural_errors(["1 notes on the same topic"]) and not plural_errors(
        ["1 note", "11 notes"]
    )


def test_the_check_catches_english_on_the_chinese_page() -> None:
    assert english_in(["已同步", "did not sync: 网络"]) == ["did not sync: 网络"]
    assert english_in(["2026年12月5日 08:30 UTC", "English"]) == []


def test_the_language_link_reads_without_a_cjk_font(ui: Page) -> None:
    ui.goto("/memory/notes")
    link = ui.locator("nav.languages a[hreflang=zh-CN]")
    label = link.inner_text()
    assert label.isascii() and "zh-CN" in label, label
    ui.goto("/memory/notes?lang=zh-CN")
    expect(ui.locator("nav.languages a[hreflang=zh-CN]")).to_contain_text("简体中文")
    expect(ui.locator("nav.languages a[hreflang=en]")).to_have_text("English")


def test_no_request_fails_on_any_page_load(
    ui: Page, page_daemon: PageDaemon, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    failed: list[str] = []
    icons: list[tuple[str, int]] = []

    def watch(response: Response) -> None:
        if response.status >= 400:
            failed.append(f"{response.status} {response.url}")
        if "favicon" in response.url:
            icons.append((response.url, response.status))

    ui.on("response", watch)
    # The next navigation cancels what the last page still loads (its event stream, at times
    # its icon): Chromium reports that as net::ERR_ABORTED, not a failure. Any other failure
    # (refused, reset, timed out) is one.
    ui.on(
        "requestfailed",
        lambda request: (
            None
            if "ERR_ABORTED" in (request.failure or "")
            else failed.append(f"{request.failure} {request.url}")
        ),
    )
    for lang in ("en", "zh-CN"):
        for section in SECTIONS:
            _loaded(ui, f"/memory/{section}?lang={lang}")
    assert failed == []
    assert icons and all(url.endswith("/memory/static/favicon.svg") for url, _ in icons)
    assert all(status == 200 for _, status in icons)
