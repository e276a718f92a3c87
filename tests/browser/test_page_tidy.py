"""To tidy up (待整理) in a real browser: a same-topic pair merged by hand with the links
rewritten and backups written, a stale plan refused with an explanation, a dismissed finding
coming back after an edit, the model's suggestion through the OpenAI wire format (spec 11, 05)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from axe_support import fits_width, serious_violations, tab_to
from daemon_support import live_daemon
from page_support import PageDaemon
from playwright.sync_api import Browser, Locator, Page, expect

from oharness.daemon import DaemonOptions
from oharness.harness.openai_provider import OpenAIChatModel
from oharness.memory.workspace import Workspace, open_workspace
from oharness.notes.format import Note

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration" / "harness"))
from stub_model_server import StubModelServer, openai_text

PAIR = (
    "Release builds are signed with the team key",
    "Release builds are signed with the team signing key",
)


def _workspace(page_daemon: PageDaemon) -> Workspace:
    return open_workspace(page_daemon.project, page_daemon.home, register=False)


def _finding(page: Page, summary: str) -> Locator:
    return page.locator("article.finding").filter(has_text=summary)


def _note(page_daemon: PageDaemon, note_id: str) -> Note | None:
    workspace = _workspace(page_daemon)
    try:
        stored = workspace.service.store("project").get(note_id)
        return stored.note if stored is not None else None
    finally:
        workspace.close()


def test_merge_a_same_topic_pair_rewrites_links(ui: Page, page_daemon: PageDaemon) -> None:
    workspace = _workspace(page_daemon)
    try:
        kept = workspace.service.remember(PAIR[0], "Use the key in the vault.\n", tags="release")
        gone = workspace.service.remember(PAIR[1], "Sign on the build box.\n", tags="release")
        linking = workspace.service.remember(
            "How to cut a release", f"Signing: see [[{gone.id}]].\n", tags="howto"
        )
    finally:
        workspace.close()
    ui.goto("/memory/tidy")
    finding = _finding(ui, PAIR[1])
    expect(finding).to_contain_text("Same topic")
    expect(finding.get_by_role("button", name="Suggest a merge")).to_have_count(0)  # no model
    finding.get_by_role("button", name="Merge by hand").click()
    editor = ui.locator("#merge-editor")
    expect(editor).to_contain_text(f"Keeps {kept.id}")
    body = editor.get_by_label("Body")
    expect(body).to_have_value(
        f"Use the key in the vault.\n\n---\n\n{PAIR[1]}\n\nSign on the build box.\n"
    )
    body.fill("Use the key in the vault; sign on the build box.\n")
    editor.get_by_role("button", name="Save the merged note").click()
    expect(ui.locator("#tidy-outcome")).to_contain_text(f"Merged into {kept.id}")
    merged = _note(page_daemon, kept.id)
    assert merged is not None
    assert merged.body == "Use the key in the vault; sign on the build box.\n"
    assert _note(page_daemon, gone.id) is None
    relinked = _note(page_daemon, linking.id)
    assert relinked is not None and f"[[{kept.id}]]" in relinked.body
    workspace = _workspace(page_daemon)
    try:
        reasons = {r.note_id: r.reason for r in workspace.service.backups().recent()}
    finally:
        workspace.close()
    assert reasons.get(gone.id) == "merge" and reasons.get(kept.id) == "merge"
    expect(_finding(ui, PAIR[1])).to_have_count(0)


def test_a_stale_plan_is_refused_with_an_explanation(ui: Page, page_daemon: PageDaemon) -> None:
    summaries = ("Standup is at nine thirty", "Standup is at nine thirty every day")
    workspace = _workspace(page_daemon)
    try:
        first = workspace.service.remember(summaries[0], "In the big room.\n", tags="meetings")
        second = workspace.service.remember(summaries[1], "On video.\n", tags="meetings")
    finally:
        workspace.close()
    ui.goto("/memory/tidy")
    _finding(ui, summaries[1]).get_by_role("button", name="Merge by hand").click()
    editor = ui.locator("#merge-editor")
    expect(editor.get_by_label("Body")).to_contain_text("In the big room.")
    workspace = _workspace(page_daemon)  # another writer edits a note of the plan meanwhile
    try:
        workspace.service.remember(summaries[1], "On video, camera on.\n", id=second.id)
    finally:
        workspace.close()
    ui.wait_for_timeout(600)  # the watcher's event arrives; the open editor is not replaced
    expect(editor.get_by_label("Body")).to_contain_text("In the big room.")
    editor.get_by_role("button", name="Save the merged note").click()
    expect(ui.locator("#tidy-outcome")).to_contain_text("changed since this merge was planned")
    expect(ui.locator("#merge-editor")).to_contain_text("Plan the merge again")
    assert _note(page_daemon, first.id) is not None and _note(page_daemon, second.id) is not None
    ui.get_by_role("button", name="Plan the merge again").click()
    expect(ui.locator("#merge-editor").get_by_label("Body")).to_contain_text("camera on")


def test_a_dismissed_finding_returns_after_an_edit(ui: Page, page_daemon: PageDaemon) -> None:
    workspace = _workspace(page_daemon)
    try:
        note = workspace.service.remember(
            "Rollbacks follow the runbook", "See [[rollback-runbook-gone]].\n", tags="ops"
        )
    finally:
        workspace.close()
    ui.goto("/memory/tidy")
    expect(ui.locator("#live-state")).to_have_attribute("data-state", "live")
    broken = ui.locator("article.finding").filter(has_text="rollback-runbook-gone")
    expect(broken).to_contain_text("Broken link")
    broken.get_by_role("button", name="Dismiss").click()
    expect(ui.locator("#tidy-outcome")).to_contain_text("Dismissed")
    expect(broken).to_have_count(0)
    ui.reload()  # dismissed for good, not just hidden on this page
    expect(ui.locator("article.finding").first).to_be_visible()
    expect(broken).to_have_count(0)
    workspace = _workspace(page_daemon)  # another writer edits the note
    try:
        workspace.service.remember(
            "Rollbacks follow the runbook",
            "See [[rollback-runbook-gone]]. Ask in #ops first.\n",
            id=note.id,
        )
    finally:
        workspace.close()
    expect(broken).to_contain_text("Broken link")  # back, without a reload


def test_keyboard_zh_cn_axe_and_360px(
    ui: Page, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    ui.goto("/memory/tidy?lang=zh-CN")
    expect(ui.get_by_role("heading", level=2)).to_have_text("待整理")
    expect(ui.get_by_role("button", name="忽略").first).to_be_visible()
    ui.goto("/memory/tidy")
    assert serious_violations(ui, "#section-tidy") == []
    assert fits_width(ui, 360)
    screenshot(ui, "tidy")
    ui.set_viewport_size({"width": 1280, "height": 900})
    tab_to(ui, "article.finding button >> nth=0")


@pytest.fixture
def model_daemon(tmp_path: Path) -> Iterator[tuple[PageDaemon, StubModelServer]]:
    stub = StubModelServer()
    stub.start()
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    workspace = open_workspace(project, home, register=True)
    try:
        for summary in PAIR:
            workspace.service.remember(summary, f"{summary}.\n", tags="release")
    finally:
        workspace.close()
    model = OpenAIChatModel("small-test", base_url=stub.url + "/v1", api_key="k")
    options = DaemonOptions(
        home=home, start=project, small_model=model, background_sync=False, watch_seconds=0.2
    )
    try:
        with live_daemon(options) as daemon:
            yield PageDaemon(daemon, home, project, {}, {}), stub
    finally:
        stub.stop()


def test_suggest_a_merge_with_the_small_model(
    browser: Browser, model_daemon: tuple[PageDaemon, StubModelServer]
) -> None:
    running, stub = model_daemon
    draft = {"summary": "Release builds are signed", "tags": ["release"], "body": "Signed.\n"}
    stub.script(openai_text(json.dumps(draft)))
    context = browser.new_context(base_url=running.url)
    try:
        page = context.new_page()
        link = running.daemon.state.auth.page_url(running.url)
        assert link is not None
        page.goto(link)  # the one-time link: cookie, then on to the page
        page.wait_for_url("**/memory/notes")
        page.goto("/memory/tidy")
        finding = _finding(page, PAIR[1])
        finding.get_by_role("button", name="Suggest a merge").click()
        editor = page.locator("#merge-editor")
        expect(editor).to_contain_text("The small model's suggestion")
        expect(editor.get_by_label("Summary")).to_have_value("Release builds are signed")
        expect(editor.get_by_label("Body")).to_have_value("Signed.\n")
        assert stub.requests and stub.requests[0].path.endswith("/chat/completions")
        editor.get_by_role("button", name="Save the merged note").click()
        expect(page.locator("#tidy-outcome")).to_contain_text("Merged into")
    finally:
        context.close()
