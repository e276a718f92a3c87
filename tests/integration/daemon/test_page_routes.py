"""The Memory page's routes over real HTTP (no browser): auth and CSRF, workspaces, refusals."""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from daemon_support import LiveDaemon, live_daemon, wait_terminal

from oharness.daemon import DaemonOptions
from oharness.daemon.background.note_watch import NoteWatcher
from oharness.daemon.events import Event
from oharness.daemon.page.router import described_sections
from oharness.harness.plugin import PageDescriptor, PageSection
from oharness.memory.workspace import open_workspace

FORM = {
    "id": "",
    "hash": "",
    "summary": "From the page",
    "type": "",
    "tags": "",
    "scope": "",
    "body": "Written through the page.",
}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    project = tmp_path / "project"
    project.mkdir()
    options = DaemonOptions(
        home=tmp_path / "home", start=project, background_sync=False, watch_seconds=0
    )
    with live_daemon(options) as running:
        yield running


@pytest.fixture
def signed_in(daemon: LiveDaemon) -> Iterator[httpx2.Client]:
    """A client holding the page's cookie (signed in through the one-time link)."""
    with httpx2.Client(base_url=daemon.url, timeout=30) as client:
        code = daemon.state.auth.page_code
        signed = client.get(f"/auth?code={code}")
        assert signed.status_code == 200 and 'url=/memory"' in signed.text
        yield client


def _notes(daemon: LiveDaemon) -> list[str]:
    return [s.note.summary for s in daemon.state.registry.default.workspace.service.all_notes()]


def test_changes_need_the_csrf_token_and_the_same_origin(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    assert signed_in.post("/memory/notes/save", data=FORM).status_code == 401
    csrf = {"X-CSRF-Token": daemon.state.auth.csrf_token}
    evil = signed_in.post(
        "/memory/notes/save", data=FORM, headers={**csrf, "Origin": "https://evil.example"}
    )
    assert evil.status_code == 403
    assert _notes(daemon) == []
    page = signed_in.get("/memory/notes")
    assert daemon.state.auth.csrf_token in page.text  # the layout hands htmx the token
    saved = signed_in.post("/memory/notes/save", data=FORM, headers=csrf)
    assert saved.status_code == 204 and "saved=1" in saved.headers["hx-redirect"]
    assert _notes(daemon) == ["From the page"]


def test_refusals_are_422_with_the_field_named_and_nothing_written(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    csrf = {"X-CSRF-Token": daemon.state.auth.csrf_token}
    cases = {
        "summary": {**FORM, "summary": "two\nlines"},
        "type": {**FORM, "type": "diary"},
        "body": {**FORM, "body": "   "},
        "tags": {**FORM, "tags": "bad\x07tag"},
        "scope": {**FORM, "scope": "user", "id": "no-such-note-abc"},
    }
    for field, form in cases.items():
        refused = signed_in.post("/memory/notes/save", data=form, headers=csrf)
        assert refused.status_code in (422,), (field, refused.text)
        if field != "scope":
            assert f'id="note-{field}-error"' in refused.text, field
    too_big = signed_in.post(
        "/memory/notes/save", data={**FORM, "body": "x" * 600_000}, headers=csrf
    )
    assert too_big.status_code == 413
    assert _notes(daemon) == []


def test_note_text_is_escaped(daemon: LiveDaemon, signed_in: httpx2.Client) -> None:
    service = daemon.state.registry.default.workspace.service
    result = service.remember("<script>alert(1)</script> & co", "<img src=x onerror=alert(2)>\n")
    page = signed_in.get(f"/memory/notes?note=project:{result.id}")
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;alert(1)" in page.text
    assert "<img src=x" not in page.text


def test_other_workspaces_and_unknown_ones(
    daemon: LiveDaemon, signed_in: httpx2.Client, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with daemon.client() as api:
        added = api.post("/workspaces", json={"path": str(other), "create": True})
        assert added.status_code == 201
        project_id = added.json()["projectId"]
    hosted = daemon.state.registry.get(project_id)
    hosted.workspace.service.remember("Only in the other project", "Here.\n", scope="project")
    page = signed_in.get(f"/memory/notes?workspace={project_id}")
    assert page.status_code == 200 and "Only in the other project" in page.text
    assert f"/memory/graph?workspace={project_id}" in page.text  # links keep the workspace
    assert "Only in the other project" not in signed_in.get("/memory/notes").text
    missing = signed_in.get("/memory/notes?workspace=p-nope")
    assert missing.status_code == 404 and "does not host that project" in missing.text
    assert missing.headers["content-type"].startswith("text/html")


def test_memory_switched_off_says_so(daemon: LiveDaemon, signed_in: httpx2.Client) -> None:
    (daemon.options.home / "plugins.json").write_text(
        json.dumps({"runtimePlugins": [{"id": "memory", "enabled": False}]})
    )
    page = signed_in.get("/memory/notes")
    assert page.status_code == 409 and "Memory is switched off" in page.text
    csrf = {"X-CSRF-Token": daemon.state.auth.csrf_token}
    assert signed_in.post("/memory/notes/save", data=FORM, headers=csrf).status_code == 409
    assert _notes(daemon) == []


def test_the_watcher_announces_files_written_by_others_only_to_listeners(
    daemon: LiveDaemon,
) -> None:
    state = daemon.state
    watcher = NoteWatcher(state, 60)
    watcher.look_once()
    other = open_workspace(daemon.options.start, daemon.options.home, register=False)
    other.service.remember("From elsewhere", "Another process.\n", scope="project")
    assert watcher.look_once() == []  # nobody listens: nothing published
    other.service.remember("Also yours", "User scope.\n", scope="user")

    async def listen() -> tuple[list[Event], list[Event]]:
        subscription = state.bus.subscribe(daemon.state.registry.default.project_id)
        try:
            return watcher.look_once(), list(subscription.events)
        finally:
            state.bus.unsubscribe(subscription)

    published, received = asyncio.run(listen())
    assert [(e.data["scope"], e.workspace) for e in published] == [("user", None)]
    assert all(e.type == "notes_changed" and e.data["source"] == "files" for e in published)
    assert received == published
    other.close()


def test_a_descriptor_section_without_an_implementation_is_an_error() -> None:
    descriptor = PageDescriptor("memory", "Memory", "memory", (PageSection("x", "X", "x"),))
    with pytest.raises(LookupError, match="'x'"):
        described_sections(descriptor)


def test_odd_unicode_round_trips_or_is_refused_by_field(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    csrf = {"X-CSRF-Token": daemon.state.auth.csrf_token}
    summary = "部署 🚀 في staging — naïve café"
    saved = signed_in.post(
        "/memory/notes/save", data={**FORM, "summary": summary, "tags": "部署, ünï"}, headers=csrf
    )
    assert saved.status_code == 204
    service = daemon.state.registry.default.workspace.service
    [stored] = [s for s in service.all_notes() if s.note.summary == summary]
    assert stored.note.tags == ("部署", "ünï")
    assert summary in signed_in.get(saved.headers["hx-redirect"]).text
    searched = signed_in.get("/memory/notes/list", params={"q": "部署"})
    assert summary in searched.text
    hidden = signed_in.post(
        "/memory/notes/save", data={**FORM, "summary": "bell\x07 in a summary"}, headers=csrf
    )
    assert hidden.status_code == 422 and 'id="note-summary-error"' in hidden.text
    assert len(service.all_notes()) == 1


def test_the_graph_follows_new_notes_and_new_recalls(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    service = daemon.state.registry.default.workspace.service
    first = service.remember("First note of the graph", "Links to [[nowhere-yet]].\n")
    assert "1 note ·" in signed_in.get("/memory/graph").text
    second = service.remember("Second note of the graph", f"See [[{first.id}]].\n")
    page = signed_in.get("/memory/graph").text
    assert f'data-note="project:{second.id}"' in page and "2 notes ·" in page
    assert "No note has been recalled" in page
    recall = service.recall
    assert recall is not None
    recall.record_usage([("project", first.id)])
    page = signed_in.get("/memory/graph").text
    assert "No note has been recalled" not in page and "1 recall in the last 30 days" in page


def test_a_save_names_a_likely_duplicate_like_remember_does(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    service = daemon.state.registry.default.workspace.service
    first = service.remember(
        "Deploys happen on Tuesdays at noon", "Release train.\n", tags="deploy,release"
    )
    csrf = {"X-CSRF-Token": daemon.state.auth.csrf_token}
    form = {**FORM, "summary": "Deploys happen on Tuesdays", "tags": "deploy, release"}
    saved = signed_in.post("/memory/notes/save", data=form, headers=csrf)
    assert saved.status_code == 204
    target = saved.headers["hx-redirect"]
    assert f"similar=project%3A{first.id}" in target
    page = signed_in.get(target).text
    assert "A note on the same topic already exists" in page
    assert f"note=project%3A{first.id}" in page


# ---- invisible characters (the Trojan Source trick) ----------------------------------------

RLO = "\u202e"


def _csrf(daemon: LiveDaemon) -> dict[str, str]:
    return {"X-CSRF-Token": daemon.state.auth.csrf_token}


def test_the_page_refuses_a_bidi_control_in_a_summary_next_to_the_field(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    form = {**FORM, "summary": f"Approve invoice {RLO}0001", "body": "Text.\n"}
    refused = signed_in.post("/memory/notes/save", data=form, headers=_csrf(daemon))
    assert refused.status_code == 422
    assert 'id="note-summary-error"' in refused.text and "U+202E" in refused.text
    tags = signed_in.post(
        "/memory/notes/save",
        data={**FORM, "summary": "Ok", "tags": "a\u200bb"},
        headers=_csrf(daemon),
    )
    assert tags.status_code == 422 and 'id="note-tags-error"' in tags.text
    assert _notes(daemon) == []


def test_a_remember_task_with_a_hidden_summary_fails_and_writes_nothing(
    daemon: LiveDaemon,
) -> None:
    with daemon.client() as http:
        content = f"Pay the vendor {RLO}today. The amount is in the ledger."
        task = http.post(
            "/workspace/memory/remember", json={"content": content, "contextMode": "clean"}
        ).json()
        done = wait_terminal(http, "remember", task["taskId"])
    assert done["status"] == "failed", done
    assert "U+202E" in done["error"]["message"]
    assert _notes(daemon) == []


def test_a_body_keeps_them_the_page_shows_escapes_and_the_editor_the_text(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    service = daemon.state.registry.default.workspace.service
    body = f"if access != 'user{RLO} \u2066// admin\u2069 \u2066':\nzero\u200bwidth\n"
    note = service.remember("Trojan Source example", body)
    assert service.find(note.id, "project").note.body == body  # kept as written
    shown = signed_in.get(f"/memory/notes?note=project:{note.id}").text
    assert RLO not in shown and "\u2066" not in shown and "\u200b" not in shown
    assert "user\\u202e \\u2066// admin\\u2069" in shown and "zero\\u200bwidth" in shown
    editor = signed_in.get(f"/memory/notes?note=project:{note.id}&edit=1").text
    hint = editor[editor.index('id="note-body-invisible"') :]
    assert "U+202E, U+2066, U+2069, U+200B" in hint[: hint.index("</p>")]  # told, each once
    start = editor.index('<textarea id="note-body"')
    assert body.rstrip("\n") in html.unescape(editor[start : editor.index("</textarea>", start)])
    saved = signed_in.post(  # saved from the editor unchanged: the body stays as it was
        "/memory/notes/save",
        data={
            **FORM,
            "id": note.id,
            "hash": service.find(note.id, "project").note.content_hash,
            "scope": "project",
            "summary": "Trojan Source example",
            "body": body,
        },
        headers=_csrf(daemon),
    )
    assert saved.status_code == 204, saved.text
    assert service.find(note.id, "project").note.body == body


def test_a_summary_written_by_hand_with_a_bidi_control_is_never_saved_as_its_escape(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    # The editor shows the summary as "\\u202e…"; sent back unchanged, that text was written.
    service = daemon.state.registry.default.workspace.service
    note = service.remember("Invoice rtl", "Body.\n")
    path = service.store("project").path_for(note.id)
    path.write_text(path.read_text().replace("Invoice rtl", f"Invoice {RLO}gnp.exe"))
    stored = service.store("project").latest(note.id)
    assert stored is not None and RLO in stored.note.summary
    editor = signed_in.get(f"/memory/notes?note=project:{note.id}&edit=1").text
    assert "Invoice \\u202egnp.exe" in editor
    form = {**FORM, "id": note.id, "hash": stored.note.content_hash, "scope": "project"}
    unchanged = {**form, "summary": "Invoice \\u202egnp.exe", "body": "Edited.\n"}
    refused = signed_in.post("/memory/notes/save", data=unchanged, headers=_csrf(daemon))
    assert refused.status_code == 422 and 'id="note-summary-error"' in refused.text
    assert path.read_text().count(RLO) == 1 and "\\u202e" not in path.read_text()
    cleaned = {**form, "summary": "Invoice gnp.exe", "body": "Edited.\n"}
    assert (
        signed_in.post("/memory/notes/save", data=cleaned, headers=_csrf(daemon)).status_code == 204
    )
    assert service.find(note.id, "project").note.summary == "Invoice gnp.exe"


def test_a_hand_written_tag_with_a_space_is_not_split_by_a_save(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    service = daemon.state.registry.default.workspace.service
    note = service.remember("Load tests run on staging", "Book a slot.\n", tags="perf")
    path = service.store("project").path_for(note.id)
    path.write_text(path.read_text().replace('"perf"', '"load testing", "perf"'))
    stored = service.store("project").latest(note.id)
    assert stored is not None and stored.note.tags == ("load testing", "perf")
    form = {**FORM, "id": note.id, "hash": stored.note.content_hash, "scope": "project"}
    kept = {**form, "summary": stored.note.summary, "tags": "load testing, perf", "body": "B.\n"}
    refused = signed_in.post("/memory/notes/save", data=kept, headers=_csrf(daemon))
    assert refused.status_code == 422 and 'id="note-tags-error"' in refused.text
    assert "hyphen" in refused.text and '"load testing"' in path.read_text()
    fixed = {**kept, "tags": "load-testing, perf"}
    assert (
        signed_in.post("/memory/notes/save", data=fixed, headers=_csrf(daemon)).status_code == 204
    )
    assert service.find(note.id, "project").note.tags == ("load-testing", "perf")


def test_a_project_note_on_a_page_without_a_project_says_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "home"  # started in OHARNESS_HOME, as oharness setup starts it
    home.mkdir()
    options = DaemonOptions(home=home, start=home, background_sync=False, watch_seconds=0)
    with live_daemon(options) as daemon, httpx2.Client(base_url=daemon.url, timeout=30) as http:
        assert http.get(f"/auth?code={daemon.state.auth.page_code}").status_code == 200
        page = http.get("/memory/notes", params={"new": "1"}).text
        select = re.search(r'<select id="note-scope".*?</select>', page, re.S)
        assert select is not None  # only "Yours" is offered
        assert 'value="user"' in select.group() and 'value=""' not in select.group()
        csrf = {"X-CSRF-Token": daemon.state.auth.csrf_token}
        refused = http.post("/memory/notes/save", data={**FORM, "scope": "project"}, headers=csrf)
        assert refused.status_code == 422
        assert "no project is open on this page" in refused.text and "Yours" in refused.text
        saved = http.post("/memory/notes/save", data={**FORM, "scope": "user"}, headers=csrf)
        assert saved.status_code == 204
