"""The Notes section in a real browser: create, edit, delete, refusals, search, links, live."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx2
from page_support import PageDaemon
from playwright.sync_api import Page, Route, expect

from oharness.memory.workspace import open_workspace

# A credential shape the detector refuses (a GitHub token; not a real one).
GITHUB_TOKEN = "ghp_jYlCb1nZMJsuPzOkXQ9CKXlucKbn00ycIf1F"


def _note_files(directory: Path) -> set[str]:
    return {path.name for path in directory.glob("*.md")}


def _backups(page_daemon: PageDaemon) -> list[tuple[str | None, str]]:
    workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
    try:
        return [(r.note_id, r.reason) for r in workspace.service.backups().recent(None)]
    finally:
        workspace.close()


def _stored(page_daemon: PageDaemon, summary: str):  # type: ignore[no-untyped-def]
    workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
    try:
        found = [s for s in workspace.service.all_notes() if s.note.summary == summary]
        return found[0] if found else None
    finally:
        workspace.close()


def _fill_form(ui: Page, summary: str, body: str, *, type_label: str, tags: str) -> None:
    ui.get_by_label("Summary").fill(summary)
    ui.get_by_label("Type", exact=True).last.select_option(label=type_label)
    ui.get_by_label("Tags").fill(tags)
    ui.get_by_label("Body").fill(body)


def test_create_edit_and_delete_a_note(ui: Page, page_daemon: PageDaemon, screenshot) -> None:
    ui.goto("/memory/notes")
    ui.get_by_role("link", name="New note").click()
    form = ui.locator("#note-form")
    _fill_form(
        form.page,
        "Staging database is reset on Mondays",
        "Reset at 06:00 UTC.\n",
        type_label="Project work",
        tags="staging, db",
    )
    form.get_by_label("Scope").select_option(label="This project")
    form.get_by_role("button", name="Save").click()
    expect(ui.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    expect(ui.locator("#note-title")).to_have_text("Staging database is reset on Mondays")
    stored = _stored(page_daemon, "Staging database is reset on Mondays")
    assert (
        stored is not None and stored.scope == "project" and stored.note.tags == ("staging", "db")
    )
    screenshot(ui, "notes-open")

    ui.get_by_role("link", name="Edit").click()
    expect(ui.get_by_label("Summary")).to_have_value("Staging database is reset on Mondays")
    ui.get_by_label("Summary").fill("Staging database is reset every Monday")
    ui.locator("#note-type").select_option(label="Reference")
    ui.get_by_label("Tags").fill("staging, database")
    ui.get_by_label("Body").fill("Reset at 06:00 UTC by the nightly job.\n")
    screenshot(ui, "notes-edit")
    ui.get_by_role("button", name="Save").click()
    expect(ui.locator("#note-title")).to_have_text("Staging database is reset every Monday")
    edited = _stored(page_daemon, "Staging database is reset every Monday")
    assert edited is not None and edited.id == stored.id
    assert edited.note.type == "reference" and edited.note.tags == ("staging", "database")
    assert edited.note.body == "Reset at 06:00 UTC by the nightly job.\n"
    assert (stored.id, "remember-update") in _backups(page_daemon)

    ui.once("dialog", lambda dialog: dialog.accept())
    ui.get_by_role("button", name="Delete").click()
    expect(ui.get_by_role("status").filter(has_text="A backup was kept")).to_be_visible()
    assert not edited.path.exists()
    assert (stored.id, "page-delete") in _backups(page_daemon)
    expect(ui.locator("#notes-list")).not_to_contain_text("Staging database")


def test_refusals_are_shown_next_to_their_field_and_write_nothing(
    ui: Page, page_daemon: PageDaemon, screenshot
) -> None:
    memory = page_daemon.project / "MEMORY"
    before = _note_files(memory)
    ui.goto("/memory/notes?new=1")
    _fill_form(
        ui,
        "Deploy credentials",
        f"The token is {GITHUB_TOKEN}\n",
        type_label="Reference",
        tags="deploy",
    )
    ui.get_by_role("button", name="Save").click()
    body_error = ui.locator("#note-body-error")
    expect(body_error).to_contain_text("looks like a credential")
    expect(ui.get_by_label("Body")).to_have_attribute("aria-invalid", "true")
    expect(ui.get_by_label("Body")).to_have_value(f"The token is {GITHUB_TOKEN}\n")  # kept
    screenshot(ui, "notes-refused")
    assert _note_files(memory) == before
    assert GITHUB_TOKEN not in ui.content().replace(  # never echoed outside the field
        f"The token is {GITHUB_TOKEN}", ""
    )

    ui.get_by_label("Body").fill("Nothing secret here.\n")
    ui.get_by_label("Summary").fill("   ")
    ui.get_by_role("button", name="Save").click()
    expect(ui.locator("#note-summary-error")).to_contain_text("The summary must be one line")
    expect(ui.locator("#note-body-error")).to_have_count(0)
    ui.get_by_label("Summary").fill(f"Token {GITHUB_TOKEN}")
    ui.get_by_role("button", name="Save").click()
    expect(ui.locator("#note-summary-error")).to_contain_text("looks like a credential")
    assert _note_files(memory) == before


def test_an_edit_racing_another_writer_is_refused_with_the_text_kept(
    ui: Page, page_daemon: PageDaemon
) -> None:
    ref = page_daemon.ids["Release checklist"]
    ui.goto(f"/memory/notes?note={ref}&edit=1")
    ui.get_by_label("Body").fill("My edit.\n")
    workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
    try:  # the agent writes meanwhile
        note_id = ref.split(":")[1]
        current = workspace.service.find(note_id, "project")
        workspace.service.remember(
            current.note.summary, current.note.body + "Also: notes.\n", id=note_id, scope="project"
        )
    finally:
        workspace.close()
    ui.get_by_role("button", name="Save").click()
    expect(ui.locator("#note-form-error")).to_contain_text("changed since you opened it")
    expect(ui.get_by_label("Body")).to_have_value("My edit.\n")
    stored = _stored(page_daemon, "Release checklist")
    assert stored is not None and stored.note.body.endswith("Also: notes.\n")


def test_search_and_filters(ui: Page, page_daemon: PageDaemon) -> None:
    ui.goto("/memory/notes")
    items = ui.locator("#notes-list li[data-note]")
    ui.get_by_label("Search").fill("staging deploy")
    expect(items.first).to_contain_text("Deploys go through the staging cluster first")
    expect(ui).to_have_url(re.compile(r"q=staging"))  # the search is in the address
    ui.get_by_label("Search").fill("")
    ui.locator("#notes-scope").select_option(label="Yours")
    expect(items).to_have_count(1)
    expect(items).to_contain_text("Prefers short commit messages")
    ui.locator("#notes-scope").select_option(label="Both")
    ui.locator("#notes-tag").select_option("office")
    expect(items).to_have_count(1)
    expect(items).to_contain_text("coffee machine")
    ui.locator("#notes-tag").select_option("")
    ui.locator("#notes-type").select_option(label="Feedback")
    expect(items).to_have_count(1)
    expect(items).to_contain_text("commit messages")
    ui.get_by_label("Search").fill("coffee")  # search and a filter together: nothing
    expect(ui.locator("#notes-list")).to_contain_text("No notes match.")
    # The same scorer as the memory tool: the order of `memory search`.
    ui.goto("/memory/notes?q=checklist+release")
    workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
    try:
        expected = [f"{h.scope}:{h.id}" for h in workspace.service.search("checklist release", 50)]
    finally:
        workspace.close()
    shown = items.evaluate_all("els => els.map(e => e.dataset.note)")
    assert shown == expected


def test_links_both_ways_with_dangling_ones_marked(ui: Page, page_daemon: PageDaemon) -> None:
    deploy = page_daemon.ids["Deploys go through the staging cluster first"]
    ui.goto(f"/memory/notes?note={deploy}")
    outgoing = ui.locator(".links-out")
    expect(outgoing.locator(".dangling")).to_contain_text("[[missing-runbook]]")
    expect(outgoing.locator(".dangling")).to_contain_text("missing")
    outgoing.get_by_role("link", name="Release checklist").click()
    expect(ui.locator("#note-title")).to_have_text("Release checklist")
    incoming = ui.locator(".links-in")
    incoming.get_by_role("link", name="Deploys go through the staging cluster first").click()
    expect(ui.locator("#note-title")).to_have_text("Deploys go through the staging cluster first")


def test_notes_written_elsewhere_appear_without_a_reload(ui: Page, page_daemon: PageDaemon) -> None:
    ui.goto("/memory/notes")
    expect(ui.locator("#live-state")).to_have_attribute("data-state", "live")
    ui.evaluate("window.__not_reloaded = true")
    env = {**os.environ, "OHARNESS_HOME": str(page_daemon.home)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "oharness.cli.main",
            "memory",
            "remember",
            "-s",
            "Written by the CLI in another process",
            "-b",
            "From a terminal.",
            "--type",
            "project",
        ],
        cwd=page_daemon.project,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    expect(ui.locator("#notes-list")).to_contain_text("Written by the CLI in another process")
    with httpx2.Client(base_url=page_daemon.url, timeout=30) as api:
        posted = api.post(
            "/workspace/memory/remember",
            json={
                "content": "The daemon task saved this about the build cache.",
                "contextMode": "clean",
            },
            headers={"Authorization": f"Bearer {page_daemon.daemon.token}"},
        )
        assert posted.status_code == 202
    expect(ui.locator("#notes-list")).to_contain_text("build cache")
    assert ui.evaluate("window.__not_reloaded") is True


def test_after_a_gap_in_the_events_the_live_parts_fetch_themselves_again(
    ui: Page, page_daemon: PageDaemon
) -> None:
    from oharness.daemon.events import Event

    deploy = page_daemon.ids["Deploys go through the staging cluster first"]
    ui.goto(f"/memory/notes?note={deploy}")
    expect(ui.locator("#live-state")).to_have_attribute("data-state", "live")
    panel = re.compile(r"/memory/notes/panel")
    listing = re.compile(r"/memory/notes/list")
    with ui.expect_request(panel), ui.expect_request(listing):
        page_daemon.daemon.state.bus.publish(Event("gap", {"dropped": 3}))
    expect(ui.locator("#note-title")).to_have_text("Deploys go through the staging cluster first")


def test_a_live_refresh_keeps_the_keyboard_focus(ui: Page, page_daemon: PageDaemon) -> None:
    ui.goto("/memory/notes")
    expect(ui.locator("#live-state")).to_have_attribute("data-state", "live")
    link = ui.get_by_role("link", name="Release checklist")
    link.focus()
    with ui.expect_response(re.compile(r"/memory/notes/list")):
        workspace = open_workspace(page_daemon.project, page_daemon.home, register=False)
        try:
            workspace.service.remember("Arrived while reading", "Something new.\n")
        finally:
            workspace.close()
    expect(ui.locator("#notes-list")).to_contain_text("Arrived while reading")
    expect(ui.get_by_role("link", name="Release checklist")).to_be_focused()


def test_an_event_during_a_refresh_is_followed_by_another_refresh(
    ui: Page, page_daemon: PageDaemon
) -> None:
    from oharness.daemon.events import Event

    ui.goto("/memory/notes")
    expect(ui.locator("#live-state")).to_have_attribute("data-state", "live")
    held: list[Route] = []
    listing = re.compile(r"/memory/notes/list")
    ui.route(listing, lambda route: route.continue_() if held else held.append(route))
    bus = page_daemon.daemon.state.bus
    with ui.expect_request(listing):  # the first refresh is on the wire, and held there
        bus.publish(Event("gap", {"dropped": 1}))
    # A mark the locator can wait for: waiting on a script would need eval, which the CSP forbids.
    ui.evaluate(
        "document.body.addEventListener("
        "'htmx:confirm', () => { document.body.dataset.asked = 'yes'; })"
    )
    bus.publish(Event("gap", {"dropped": 1}))  # something changes again meanwhile
    expect(ui.locator("body")).to_have_attribute("data-asked", "yes")
    with ui.expect_request(listing):
        held[0].continue_()


def test_a_summary_of_thousands_of_characters_takes_three_lines_of_the_list(
    ui: Page, page_daemon: PageDaemon
) -> None:
    # Written by hand (remember refuses over 200 characters); before, its row was 1,759 px.
    path = page_daemon.project / "MEMORY" / "long-summary-a01.md"
    summary = "Long " * 600
    path.write_text(
        '---\n{"id": "long-summary-a01", "summary": "' + summary + '"}\n---\n\nBody.\n',
        encoding="utf-8",
    )
    try:
        ui.goto("/memory/notes?note=project:long-summary-a01")
        row = ui.locator('#notes-list li[data-note="project:long-summary-a01"]')
        expect(row).to_be_visible()
        box = row.bounding_box()
        assert box is not None and box["height"] < 150, box
    finally:
        path.unlink()
