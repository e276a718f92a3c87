"""Accessibility and layout checks shared by the section tests (imported by bare name)."""

from __future__ import annotations

from typing import Any

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

_AXE = Axe()


def serious_violations(page: Page, selector: str) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations inside ``selector``."""
    results = _AXE.run(page, context=selector)
    violations: list[dict[str, Any]] = results.response["violations"]
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["html"][:200] for n in v["nodes"]]}
        for v in violations
        if v.get("impact") in ("serious", "critical")
    ]


def fits_width(page: Page, width: int = 360) -> bool:
    """True when nothing makes the page scroll sideways at ``width`` px."""
    page.set_viewport_size({"width": width, "height": 800})
    wide: bool = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    return wide


def tab_to(page: Page, selector: str, limit: int = 80) -> None:
    """Press Tab until ``selector`` has the focus (fails when it is never reached)."""
    target = page.locator(selector)
    for _ in range(limit):
        page.keyboard.press("Tab")
        if target.evaluate("element => element === document.activeElement"):
            return
    raise AssertionError(f"{selector} is not reachable with the keyboard")
