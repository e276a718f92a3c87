"""The Graph section in a browser: links, orphans, dangling links, recall use; opening notes."""

from __future__ import annotations

from page_support import PageDaemon
from playwright.sync_api import Page, expect

from oharness.memory.workspace import open_workspace


def _recall(page_daemon: PageDaemon, ref: str, times: int) -> None:
    workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
    try:
        recall = workspace.service.recall
        assert recall is not None
        scope, note_id = ref.split(":")
        for _ in range(times):
            recall.record_usage([(scope, note_id)])  # type: ignore[list-item]
    finally:
        workspace.close()


def test_the_graph_shows_links_orphans_and_dangling_links_and_opens_a_note(
    ui: Page, page_daemon: PageDaemon, screenshot
) -> None:
    deploy = page_daemon.ids["Deploys go through the staging cluster first"]
    coffee = page_daemon.ids["Lonely note about the coffee machine"]
    _recall(page_daemon, deploy, 9)
    ui.goto("/memory/graph")
    graph = ui.locator("#link-graph")
    expect(graph.locator(".edge:not(.edge-dangling)")).not_to_have_count(0)
    expect(graph.locator(".node-dangling title")).to_contain_text(["[[missing-runbook]]"])
    expect(graph.locator(f'a.orphan[data-note="{coffee}"]')).to_have_count(1)
    big = graph.locator(f'a[data-note="{deploy}"] circle')
    small = graph.locator(f'a[data-note="{page_daemon.ids["Release checklist"]}"] circle')
    assert float(big.get_attribute("r") or 0) > float(small.get_attribute("r") or 0)
    expect(ui.get_by_text("links to missing notes: 1")).to_be_visible()
    expect(ui.locator("table")).to_contain_text("Deploys go through the staging cluster first")
    screenshot(ui, "graph")
    graph.locator(f'a[data-note="{deploy}"]').click()
    expect(ui.locator("#note-title")).to_have_text("Deploys go through the staging cluster first")
    expect(ui.locator("#note-panel")).to_contain_text("Recalled 9×")
    chart = ui.locator("#note-panel").get_by_role("img")  # this note's recalls per day
    expect(chart).to_have_attribute("aria-label", "9 recalls in the last 30 days")
