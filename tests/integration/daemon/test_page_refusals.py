"""Refusals and limits of the Memory page's Cloud sync, Conflicts, To tidy up and Backups over
real HTTP: bad input changes nothing and says why; long lists are cut (spec 11)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_support import LiveDaemon, live_daemon

from oharness.daemon import DaemonOptions
from oharness.memory.workspace import open_workspace, wall_clock_ms
from oharness.notes.format import Note, serialise_note_bytes
from oharness.sync.conflicts import ConflictBook, ConflictRecord
from oharness.sync.sync_service import SyncService, sync_targets


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[LiveDaemon, str]]:
    """A daemon (no background sync) whose project holds one open conflict."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    workspace = open_workspace(project, home, register=True)
    try:
        stored = workspace.service.remember("Coffee", "Descale on Fridays.\n")
        note = workspace.service.store("project").get(stored.id)
        assert note is not None
        cloud = note.note.with_changes(body="Descale on Thursdays.\n")
        service = SyncService(workspace.home, backups=workspace.service.backups(), clock=lambda: 1)
        target = sync_targets(workspace)[0]
        record = ConflictRecord(
            stored.id,
            "merge-conflict",
            1,
            serialise_note_bytes(note.note).decode(),
            None,
            serialise_note_bytes(cloud).decode(),
            "rev-1",
            cloud.content_hash,
        )
        ConflictBook(service.base(target).conflicts).put(record)
    finally:
        workspace.close()
    options = DaemonOptions(home=home, start=project, background_sync=False, watch_seconds=0)
    with live_daemon(options) as running:
        yield running, stored.id


def test_a_hand_merge_of_a_conflict_resolved_elsewhere_saves_nothing(
    daemon: tuple[LiveDaemon, str],
) -> None:
    running, note_id = daemon
    with running.client() as http:
        assert (
            http.post(f"/sync/conflicts/{note_id}/resolve", json={"keep": "local"}).status_code
            == 409
        )  # background sync is off here: the REST route says so
        page = http.get("/memory/conflicts").text
        assert f"conflict-project-{note_id}" in page
        form = {
            "scope": "project",
            "id": note_id,
            "summary": "Coffee",
            "type": "",
            "tags": "",
            "body": "Descale on Fridays or Thursdays.\n",
        }
        bad = http.post("/memory/conflicts/resolve", data={**form, "keep": "everything"})
        assert bad.status_code == 422 and "Choose one of the resolutions" in bad.text
        done = http.post("/memory/conflicts/resolve", data={**form, "keep": "cloud"})
        assert done.status_code == 200 and "Took the cloud" in done.text
        late = http.post("/memory/conflicts/merge", data=form)  # a second tab, too late
        assert late.status_code == 422 and "no longer open" in late.text
    text = (running.options.start / "MEMORY" / f"{note_id}.md").read_text("utf-8")
    assert "Descale on Thursdays." in text and "or Thursdays" not in text


def test_a_damaged_merge_plan_and_an_unknown_backup_are_refused(
    daemon: tuple[LiveDaemon, str],
) -> None:
    running, _ = daemon
    with running.client() as http:
        damaged = http.post(
            "/memory/tidy/apply",
            data={"plan": '{"scope": "project"}', "summary": "s", "body": "b", "tags": ""},
        )
        assert damaged.status_code == 422 and "plan the merge again" in damaged.text
        unknown = http.post("/memory/backups/restore", data={"backup": "../daemon-token"})
        assert unknown.status_code == 422 and "no longer exists" in unknown.text
        finding = http.post("/memory/tidy/dismiss", data={"finding": "same-topic-nothing"})
        assert finding.status_code == 422 and "no longer exists" in finding.text


def test_the_tidy_list_draws_at_most_two_hundred_findings(daemon: tuple[LiveDaemon, str]) -> None:
    running, _ = daemon
    workspace = open_workspace(running.options.start, running.options.home, register=False)
    try:
        store = workspace.service.store("project")
        now = wall_clock_ms()  # recent: broken links only, none unused
        with store.batch():
            for n in range(205):
                body = f"See [[gone-{n}]].\n"
                note = Note(f"pointer-{n}", f"Pointer number {n}", body, (), None, now, now)
                store.save(note, create=True)
    finally:
        workspace.close()
    with running.client() as http:
        page = http.get("/memory/tidy").text
    assert page.count('class="panel finding"') == 200
    assert "5 more findings are not shown" in page
