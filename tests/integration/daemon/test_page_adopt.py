"""The Memory page lists Markdown that is not a note yet, and its button makes it a note
through the same library call as ``oharness memory adopt`` (real HTTP on loopback)."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from daemon_support import LiveDaemon, live_daemon

from oharness.daemon import DaemonOptions


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
        yield client


def test_a_plain_file_is_listed_and_adopted_from_the_page(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    service = daemon.state.registry.default.workspace.service
    folder = service.store("project").directory
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "deploy-steps.md").write_text("# Deploy steps\n\nFrom main.\n", encoding="utf-8")
    (folder / "broken.md").write_text('---\n{"id": "broken", "su\n---\nx\n', encoding="utf-8")
    listed = html.unescape(signed_in.get("/memory/notes/list").text)
    assert "deploy-steps.md" in listed and "Not a note yet" in listed
    assert "oharness memory adopt deploy-steps.md" in listed and "broken.md" in listed
    assert listed.count('hx-post="/memory/notes/adopt"') == 1  # broken JSON: fixed by hand
    csrf = {"X-CSRF-Token": daemon.state.auth.csrf_token}
    form = {"scope": "project", "file": "deploy-steps.md"}
    assert signed_in.post("/memory/notes/adopt", data=form).status_code == 401
    adopted = signed_in.post("/memory/notes/adopt", data=form, headers=csrf)
    assert adopted.status_code == 204, adopted.text
    assert "note=project%3Adeploy-steps" in adopted.headers["hx-redirect"]
    stored = service.store("project").get("deploy-steps")
    assert stored is not None and stored.note.summary == "Deploy steps"
    assert [r.reason for r in service.recent_backups()] == ["adopt"]
    page = html.unescape(signed_in.get(adopted.headers["hx-redirect"]).text)
    assert "deploy-steps.md is now the note deploy-steps" in page
    again = signed_in.post("/memory/notes/adopt", data=form, headers=csrf)
    assert again.status_code == 422 and "nothing to adopt" in html.unescape(again.text)
    refused = signed_in.post(
        "/memory/notes/adopt", data={"scope": "project", "file": "broken.md"}, headers=csrf
    )
    assert refused.status_code == 422 and "fix the file by hand" in html.unescape(refused.text)
    escape = {"scope": "project", "file": "../outside.md"}
    assert signed_in.post("/memory/notes/adopt", data=escape, headers=csrf).status_code == 422
    bogus = signed_in.post(
        "/memory/notes/adopt", data={"scope": "team", "file": "broken.md"}, headers=csrf
    )
    assert bogus.status_code == 422 and "unknown scope 'team'" in html.unescape(bogus.text)
    zh = html.unescape(signed_in.get("/memory/notes/list?lang=zh-CN").text)
    assert "笔记文件夹中尚不是笔记的文件" in zh


def test_the_reason_and_fix_of_a_loose_file_are_in_the_page_s_language(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    service = daemon.state.registry.default.workspace.service
    saved = service.remember("Deploys happen on Tuesdays", "Noon.", scope="project")
    folder = service.store("project").directory
    (folder / f"{saved.id}.md").rename(folder / "deploys.md")
    (folder / "plain.md").write_text("# Plain\n\nText.\n", encoding="utf-8")
    (folder / "broken.md").write_text('---\n{"id": "broken", "su\n---\nx\n', encoding="utf-8")
    en = html.unescape(signed_in.get("/memory/notes/list").text)
    assert f"note {saved.id} renamed by hand to deploys.md" in en
    assert f"put it back as {saved.id}.md with: oharness memory adopt deploys.md" in en
    assert "not a note yet: the file does not start with a '---' line; make it a note" in en
    assert "not a note yet: the frontmatter is not valid JSON; fix it by hand" in en
    zh = html.unescape(signed_in.get("/memory/notes/list?lang=zh-CN").text)
    assert f"笔记 {saved.id} 被手动改名为 deploys.md" in zh
    assert f"用以下命令放回为 {saved.id}.md：oharness memory adopt deploys.md" in zh
    assert "前置元数据不是有效的 JSON；请手动修复" in zh
    assert "用以下命令转为笔记：oharness memory adopt plain.md（原文件会先备份）" in zh
    for english in ("not a note yet", "renamed by hand", "put it back", "make it a note"):
        assert english not in zh


def test_a_hostile_file_name_is_shown_as_text(daemon: LiveDaemon, signed_in: httpx2.Client) -> None:
    service = daemon.state.registry.default.workspace.service
    folder = service.store("project").directory
    folder.mkdir(parents=True, exist_ok=True)
    hostile = "<img src=x onerror=alert(1)>'\".md"
    (folder / hostile).write_text("# Hi\n", encoding="utf-8")
    for lang in ("en", "zh-CN"):
        listed = signed_in.get(f"/memory/notes/list?lang={lang}").text
        assert "<img" not in listed and "&lt;img src=x onerror=alert(1)&gt;" in listed
