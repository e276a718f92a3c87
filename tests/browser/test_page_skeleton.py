"""The page's frame: the one-time sign-in, the sections, the languages, the placeholders."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx2
from page_support import PageDaemon
from playwright.sync_api import Page, expect

SECTION_LABELS = {
    "en": ["Notes", "Cloud sync", "Conflicts", "To tidy up", "Backups", "Graph"],
    "zh-CN": ["笔记", "云同步", "冲突", "待整理", "备份", "图谱"],
}


def test_every_section_is_reachable_from_the_navigation(ui: Page) -> None:
    ui.goto("/memory")
    nav = ui.get_by_role("navigation", name="Sections")
    expect(nav.get_by_role("link")).to_have_text(SECTION_LABELS["en"])
    nav.get_by_role("link", name="Backups").click()
    expect(ui).to_have_url(re.compile(r"/memory/backups$"))
    expect(ui.get_by_role("heading", level=2)).to_have_text("Backups")
    expect(ui.locator("#backups-list")).to_be_visible()


def test_zh_cn_by_query_and_by_browser_language(ui: Page, page_daemon: PageDaemon) -> None:
    ui.goto("/memory/notes?lang=zh-CN")
    expect(ui.locator("html")).to_have_attribute("lang", "zh-CN")
    nav = ui.get_by_role("navigation", name="栏目")
    expect(nav.get_by_role("link")).to_have_text(SECTION_LABELS["zh-CN"])
    nav.get_by_role("link", name="待整理").click()  # the choice is kept across links
    expect(ui.get_by_role("heading", level=2)).to_have_text("待整理")
    context = ui.context.browser.new_context(  # type: ignore[union-attr]
        base_url=page_daemon.url,
        storage_state=page_daemon.storage_state,  # type: ignore[arg-type]
        locale="zh-CN",
    )
    try:
        page = context.new_page()
        page.goto("/memory/notes")
        expect(page.get_by_role("navigation", name="栏目")).to_be_visible()
        page.get_by_role("link", name="English").click()
        expect(page.get_by_role("navigation", name="Sections")).to_be_visible()
    finally:
        context.close()


def test_a_browser_without_the_cookie_is_told_how_to_sign_in(page_daemon: PageDaemon) -> None:
    with httpx2.Client(base_url=page_daemon.url) as anonymous:
        page = anonymous.get("/memory/notes", headers={"Accept": "text/html"})
        assert page.status_code == 401
        assert "one-time sign-in link" in page.text and "oharness setup" in page.text
        api = anonymous.get("/memory/notes")
        assert api.status_code == 401 and api.json()["code"] == "token_required"
        assert anonymous.get("/memory/static/htmx-2.0.11.min.js").status_code == 200
        assert anonymous.get("/memory/static/..%2Fdaemon-token").status_code == 404


def test_zh_cn_labels_are_drawn_as_glyphs_not_boxes(
    ui: Page, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    """Without a Chinese font Chromium draws every character as the same box, so two labels
    of as many characters would look alike (scripts/test.sh installs the font)."""
    ui.goto("/memory/notes?lang=zh-CN")
    nav = ui.get_by_role("navigation", name="栏目")
    for first, second in (("冲突", "备份"), ("云同步", "待整理")):  # neither is the open section
        shots = [nav.get_by_role("link", name=label).screenshot() for label in (first, second)]
        assert shots[0] != shots[1], f"{first} and {second} look alike: no Chinese font?"
    screenshot(ui, "notes-zh-CN")
