"""The Memory page's Cloud sync panel against a real sync server: a 429 reads as "too frequent,
will be retried" and holds sync now back until its deadline; a free plan shows its limits; a
scope's error names the scope (spec 11, 07.5, 07.7)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_support import LiveDaemon, live_daemon

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from sync_server_support import live_server, make_settings, token_for

from oharness.daemon import DaemonOptions
from oharness.memory.workspace import open_workspace
from oharness.project.paths import HomeLayout
from oharness.storage.file import FileObjectStore
from oharness.sync.protocol import PlanLimits
from oharness.sync.settings_file import SyncSettingsFile


@contextlib.contextmanager
def _running(tmp_path: Path, rate: int, plan: str) -> Iterator[LiveDaemon]:
    settings = make_settings(
        rate_per_minute=rate, free_plan_limits=PlanLimits(max_notes=200, max_body_bytes=8192)
    )
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    open_workspace(project, home, register=True).close()
    with live_server(FileObjectStore(tmp_path / "storage"), settings) as server:
        SyncSettingsFile(HomeLayout(home)).login(server.url, token_for("bob", plan=plan))
        with live_daemon(DaemonOptions(home=home, start=project, watch_seconds=0)) as running:
            yield running


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    with _running(tmp_path, 3, "free") as running:
        yield running


def _rate_limited(daemon: LiveDaemon) -> None:
    deadline = time.monotonic() + 30
    with daemon.client() as http:
        while time.monotonic() < deadline:
            scopes = http.post("/sync/now").json()["scopes"]
            if any(scope["retryAfter"] for scope in scopes):
                return
    raise AssertionError("the sync server never answered 429")


def test_a_429_is_too_frequent_and_holds_sync_now_back(daemon: LiveDaemon) -> None:
    _rate_limited(daemon)
    with daemon.client() as http:
        page = http.get("/memory/sync").text
        assert "Sync was too frequent and will be retried." in page
        assert "Sync now is possible again at" in page
        refused = http.post("/memory/sync/now")
        assert refused.status_code == 422
        assert "Sync now refused: sync was too frequent and will be retried at" in refused.text
        zh = http.get("/memory/sync?lang=zh-CN").text
        assert "同步过于频繁，稍后将自动重试。" in zh


def test_a_free_plan_shows_its_limits(daemon: LiveDaemon, tmp_path: Path) -> None:
    def project_row(page: str) -> str:
        projects = page.split('id="sync-projects"', 1)[1]  # when each used project last synced
        return projects.split(str((tmp_path / "project").resolve()), 1)[1].split("</tr>", 1)[0]

    with daemon.client() as http:
        deadline = time.monotonic() + 30
        # The plan shows from the first answer; the project's row once its pass is recorded.
        while "Free plan:" not in (page := http.get("/memory/sync").text) or (
            "never" in project_row(page)
        ):
            assert time.monotonic() < deadline, "the plan or the project's last sync never showed"
            http.post("/sync/now")
            time.sleep(0.2)
    assert "at most 200 notes;" in page
    assert "each note&#39;s body at most 8,192 bytes." in page
    assert "<td>" in project_row(page)


def test_notes_that_did_not_sync_are_listed_with_their_reason(tmp_path: Path) -> None:
    with _running(tmp_path, 100_000, "paid") as daemon:
        memory = tmp_path / "project" / "MEMORY"
        (memory / "broken.md").write_text("this is not a note file\n", encoding="utf-8")
        with daemon.client() as http:
            deadline = time.monotonic() + 30
            while "Notes that did not sync" not in (page := http.get("/memory/sync").text):
                assert time.monotonic() < deadline, "the unsyncable file never showed"
                http.post("/sync/now")
                time.sleep(0.2)
    section = page.split('id="sync-scope-project"', 1)[1].split('id="sync-scope-user"', 1)[0]
    assert "Notes that did not sync" in section and "broken.md" in section
    assert "the file cannot be read as a note" in section and "no_frontmatter" in section


def test_the_panel_says_whether_sync_is_end_to_end_encrypted(tmp_path: Path) -> None:
    from oharness.sync.encryption import DeviceKey, save_key

    with _running(tmp_path, 0, "paid") as running, running.client() as http:
        plain = http.get("/memory/sync").text
        assert "Sync is not end-to-end encrypted" in plain and "oharness sync encrypt" in plain
        layout = HomeLayout(tmp_path / "home")
        save_key(layout, DeviceKey("http://sync.test", "bob", bytes(32), active=True))
        sealed = http.get("/memory/sync/status").text
        assert "End-to-end encrypted: the sync service stores your notes sealed" in sealed
        assert "已端到端加密" in http.get("/memory/sync?lang=zh-CN").text


def test_the_panel_turns_encryption_on_after_the_warning(tmp_path: Path) -> None:
    with _running(tmp_path, 0, "paid") as running, running.client() as http:
        panel = http.get("/memory/sync").text
        assert 'id="sync-e2e-form"' in panel and "cannot be read by anyone" in panel
        form = {"passphrase": "correct horse battery", "again": "correct horse battery"}
        unconfirmed = http.post("/memory/sync/encrypt", data=form)
        assert unconfirmed.status_code == 422  # the warning was not acknowledged
        mismatch = http.post(
            "/memory/sync/encrypt", data={**form, "again": "other", "understood": "1"}
        )
        assert mismatch.status_code == 422 and "The two passphrases differ" in mismatch.text
        short = {"passphrase": "short", "again": "short", "understood": "1"}
        refused = http.post("/memory/sync/encrypt", data=short)
        assert refused.status_code == 422 and "under 10 characters" in refused.text
        assert not (tmp_path / "home" / "e2e-key.json").exists()
        done = http.post("/memory/sync/encrypt", data={**form, "understood": "1"})
        assert done.status_code == 200, done.text
        assert (
            "End-to-end encryption is on" in done.text and "Recovery key, shown once" in done.text
        )
        assert (tmp_path / "home" / "e2e-key.json").exists()
        after = http.get("/memory/sync").text
        assert "End-to-end encrypted: the sync service stores your notes sealed" in after
        assert 'id="sync-e2e-form"' not in after
