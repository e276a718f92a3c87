"""Invisible characters (the Trojan Source trick) through the daemon: the page and a remember
task refuse them in a summary with the field named and nothing written; a body keeps them, and
the Memory page shows each as an escape, except in the editor, which holds the body as it is."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from daemon_support import LiveDaemon, live_daemon, wait_terminal

from oharness.daemon import DaemonOptions

RLO = "\u202e"
FORM = {"id": "", "hash": "", "type": "", "tags": "", "scope": "", "body": "Text.\n"}


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
    with httpx2.Client(base_url=daemon.url, timeout=30) as client:
        assert client.get(f"/auth?code={daemon.state.auth.page_code}").status_code == 200
        client.headers["X-CSRF-Token"] = daemon.state.auth.csrf_token
        yield client


def _summaries(daemon: LiveDaemon) -> list[str]:
    return [s.note.summary for s in daemon.state.registry.default.workspace.service.all_notes()]


def test_the_page_refuses_a_bidi_control_in_a_summary_next_to_the_field(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    form = {**FORM, "summary": f"Approve invoice {RLO}0001"}
    refused = signed_in.post("/memory/notes/save", data=form)
    assert refused.status_code == 422
    assert 'id="note-summary-error"' in refused.text and "U+202E" in refused.text
    tags = signed_in.post("/memory/notes/save", data={**FORM, "summary": "Ok", "tags": "a\u200bb"})
    assert tags.status_code == 422 and 'id="note-tags-error"' in tags.text
    assert _summaries(daemon) == []


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
    assert _summaries(daemon) == []


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
    )
    assert saved.status_code == 204, saved.text
    assert service.find(note.id, "project").note.body == body
