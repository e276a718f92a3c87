"""The graph at its cap (400 notes drawn): labels that never overlap as Chromium draws them,
opened with the keyboard, and a visible sideways scroll at 360 px (issue 32)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from axe_support import tab_to
from page_support import PageDaemon
from playwright.sync_api import Page, expect

from oharness.memory.workspace import open_workspace

_BOXES = """() => Array.from(document.querySelectorAll('#link-graph .node-label')).map(text => {
  const box = text.getBBox();
  return [box.x, box.y, box.x + box.width, box.y + box.height];
})"""
_CIRCLES = """() => Array.from(document.querySelectorAll('#link-graph circle')).map(circle => {
  const box = circle.getBBox();
  return [box.x, box.y, box.x + box.width, box.y + box.height];
})"""


@pytest.fixture(scope="module", autouse=True)
def four_hundred_notes(page_daemon: PageDaemon) -> None:
    workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
    try:
        service = workspace.service
        hub = ""
        for index in range(420):
            body = f"Note {index}.\n" + (f"See [[{hub}]].\n" if hub and index % 6 else "")
            summary = (
                f"部署流程第 {index} 步：先在预发布环境验证"
                if index % 4 == 0
                else f"Linked note {index} about the payment adapter and its retries"
            )
            result = service.remember(summary, body)
            if index % 6 == 0:
                hub = result.id
        recall = service.recall
        assert recall is not None
        recall.record_usage([("project", hub)])
    finally:
        workspace.close()


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


def test_labels_never_collide_as_drawn(
    ui: Page, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    ui.goto("/memory/graph")
    expect(ui.locator("#graph-capped")).to_contain_text("400")
    labels = ui.locator("#link-graph .node-label")
    assert labels.count() >= 300  # most of the 400 drawn notes are named on the picture
    boxes: list[list[float]] = ui.evaluate(_BOXES)
    circles: list[list[float]] = ui.evaluate(_CIRCLES)
    for index, box in enumerate(boxes):
        clashes = [other for other in boxes[index + 1 :] if _overlap(box, other)]
        assert clashes == [], (box, clashes[:3])
        assert not any(_overlap(box, circle) for circle in circles), box
    texts: list[str] = ui.evaluate(
        "Array.from(document.querySelectorAll('#link-graph .node-label')).map(t => t.textContent)"
    )
    assert any(text.endswith("…") for text in texts)
    screenshot(ui, "graph-400")


def test_a_node_opens_with_the_keyboard(ui: Page) -> None:
    ui.goto("/memory/graph")
    first = ui.locator("#link-graph a.node").first
    target = first.get_attribute("data-note")
    tab_to(ui, f'#link-graph a.node[data-note="{target}"]', limit=120)
    ui.keyboard.press("Enter")
    expect(ui).to_have_url(re.compile(r"note="))
    expect(ui.locator("#note-title")).to_be_visible()


def test_at_360_px_the_graph_and_the_table_scroll_visibly(ui: Page) -> None:
    ui.set_viewport_size({"width": 360, "height": 800})
    ui.goto("/memory/graph")
    for selector in (".graph-figure", "#section-graph .table-wrap"):
        scroller = ui.locator(selector).first
        wide: list[int] = scroller.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert wide[0] > wide[1], (selector, wide)  # wider than the screen: it scrolls
        # The cue: a shadow on the side where more is hidden (Playwright's headless Chromium
        # hides scrollbars, so the screenshots show the shadow and the hint line).
        shadow = scroller.evaluate("e => getComputedStyle(e).backgroundImage")
        assert "radial-gradient" in shadow, (selector, shadow)
        before = scroller.evaluate("e => e.scrollLeft")
        scroller.evaluate("e => e.scrollBy(200, 0)")
        assert scroller.evaluate("e => e.scrollLeft") > before
    expect(ui.locator(".scroll-hint").first).to_be_visible()
    assert ui.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
