"""Access: axe-core on every section, 360 px without horizontal scrolling, a keyboard-only walk."""

from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from page_support import PageDaemon
from playwright.sync_api import Page, expect

SECTIONS = ("notes", "sync", "conflicts", "tidy", "backups", "graph")
_AXE = Axe()


def _views(page_daemon: PageDaemon) -> list[str]:
    deploy = page_daemon.ids["Deploys go through the staging cluster first"]
    return [
        *(f"/memory/{name}" for name in SECTIONS),
        f"/memory/notes?note={deploy}",
        f"/memory/notes?note={deploy}&edit=1",
        "/memory/notes?new=1",
        "/memory/notes?lang=zh-CN",
        "/memory/graph?lang=zh-CN",
    ]


def _serious(page: Page) -> list[dict[str, Any]]:
    results = _AXE.run(page)
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_no_serious_or_critical_axe_violations_on_any_section(
    ui: Page, page_daemon: PageDaemon
) -> None:
    found = {}
    for path in _views(page_daemon):
        ui.goto(path)
        violations = _serious(ui)
        if violations:
            found[path] = violations
    assert found == {}
    # The check can fail: an unlabelled control is a serious violation axe reports.
    ui.evaluate("document.querySelector('main').append(document.createElement('select'))")
    assert any(v["id"] == "select-name" for v in _serious(ui))


@pytest.mark.parametrize("width", [360, 1280])
def test_no_horizontal_scrolling(ui: Page, page_daemon: PageDaemon, width: int, screenshot) -> None:
    ui.set_viewport_size({"width": width, "height": 800})
    wide = {}
    for path in _views(page_daemon):
        ui.goto(path)
        scroll = ui.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        if scroll[0] > scroll[1]:
            wide[path] = scroll
    assert wide == {}
    if width == 360:
        for name in SECTIONS:
            ui.goto(f"/memory/{name}")
            screenshot(ui, f"section-{name}")


def _focused(page: Page) -> dict[str, Any]:
    return page.evaluate(
        """() => { const e = document.activeElement; const s = getComputedStyle(e);
        return {tag: e.tagName, text: (e.textContent || '').trim().slice(0, 60),
                id: e.id, outline: s.outlineStyle, width: s.outlineWidth}; }"""
    )


def _tab_to(page: Page, text: str, *, limit: int = 60) -> dict[str, Any]:
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = _focused(page)
        if focused["text"] == text or focused["id"] == text:
            assert focused["outline"] not in ("none", "") and focused["width"] != "0px", focused
            return focused
    raise AssertionError(f"{text!r} is not reachable with Tab")


def test_keyboard_only_walk_through_the_main_actions(ui: Page, page_daemon: PageDaemon) -> None:
    ui.goto("/memory/notes")
    ui.keyboard.press("Tab")
    assert _focused(ui)["text"] == "Skip to the section"  # the first stop
    _tab_to(ui, "New note")
    ui.keyboard.press("Enter")
    expect(ui.get_by_role("heading", name="New note")).to_be_visible()
    _tab_to(ui, "note-summary")
    ui.keyboard.type("Typed without a mouse")
    _tab_to(ui, "note-type")
    ui.keyboard.press("ArrowDown")  # the first type
    _tab_to(ui, "note-tags")
    ui.keyboard.type("keyboard")
    _tab_to(ui, "note-body")
    ui.keyboard.type("Every step was a key press.")
    _tab_to(ui, "Save")
    ui.keyboard.press("Enter")
    expect(ui.locator("#note-title")).to_have_text("Typed without a mouse")

    _tab_to(ui, "Edit")
    ui.keyboard.press("Enter")
    expect(ui.get_by_role("heading", name="Edit note")).to_be_visible()
    _tab_to(ui, "note-summary")
    ui.keyboard.press("End")
    ui.keyboard.type(", edited")
    _tab_to(ui, "Save")
    ui.keyboard.press("Enter")
    expect(ui.locator("#note-title")).to_have_text("Typed without a mouse, edited")

    ui.once("dialog", lambda dialog: dialog.accept())
    _tab_to(ui, "Delete")
    ui.keyboard.press("Enter")
    expect(ui.get_by_role("status").filter(has_text="A backup was kept")).to_be_visible()

    _tab_to(ui, "notes-q")
    ui.keyboard.type("coffee")
    expect(ui.locator("#notes-list li[data-note]")).to_have_count(1)
    _tab_to(ui, "Lonely note about the coffee machine")
    ui.keyboard.press("Enter")
    expect(ui.locator("#note-title")).to_have_text("Lonely note about the coffee machine")

    _tab_to(ui, "Graph")
    ui.keyboard.press("Enter")
    expect(ui.get_by_role("heading", level=2)).to_have_text("Graph")
    deploy = page_daemon.ids["Deploys go through the staging cluster first"]
    for _ in range(80):  # the graph's nodes are links too
        ui.keyboard.press("Tab")
        if ui.evaluate("document.activeElement.dataset.note") == deploy:
            break
    else:
        raise AssertionError("no graph node is reachable with Tab")
    ui.keyboard.press("Enter")
    expect(ui.locator("#note-title")).to_have_text("Deploys go through the staging cluster first")
