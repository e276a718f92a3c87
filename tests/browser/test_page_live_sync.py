"""Live from the cloud: a note another device synced appears on the page without a reload.

A real sync server (file storage, loopback, a development token) and two homes signed in to it:
this machine's daemon (background sync on) shows the page; the second device writes a note
with the CLI and syncs; this daemon's sync pass pulls it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from daemon_support import live_daemon
from page_support import PageDaemon, seed_project, sign_in
from playwright.sync_api import Browser, Page, expect
from sync_support import run_cli, sync_server_process

from oharness.daemon import DaemonOptions

SECRET = "page-live-sync-secret-0123456789abcdef012345"


def _cli(home: Path, cwd: Path, *args: str) -> str:
    return run_cli(home, cwd, *args, secret=SECRET)


@pytest.fixture(scope="module")
def sync_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sync_server_process(tmp_path_factory.mktemp("cloud"), SECRET) as origin:
        yield origin


@pytest.fixture(scope="module")
def page_daemon(
    tmp_path_factory: pytest.TempPathFactory, browser: Browser, sync_origin: str
) -> Iterator[PageDaemon]:
    root = tmp_path_factory.mktemp("page-sync")
    home, project = root / "home", root / "project"
    project.mkdir()
    ids = seed_project(home, project)
    token = _cli(home, project, "sync-server", "token", "--user", "ann", "--plan", "paid").strip()
    _cli(home, project, "login", "--origin", sync_origin, "--token", token)
    options = DaemonOptions(home=home, start=project, background_sync=True, watch_seconds=0.2)
    with live_daemon(options) as daemon:
        yield PageDaemon(daemon, home, project, ids, sign_in(browser, daemon))


def test_a_note_pulled_from_the_second_device_appears_without_a_reload(
    ui: Page, page_daemon: PageDaemon, sync_origin: str, tmp_path: Path
) -> None:
    home, project = page_daemon.home, page_daemon.project
    with httpx2.Client(base_url=page_daemon.url, timeout=60) as api:
        api.headers["Authorization"] = f"Bearer {page_daemon.daemon.token}"
        assert api.post("/sync/now").status_code == 200  # this machine's notes are in the cloud
    other_home, other = tmp_path / "home-b", tmp_path / "device-b"
    (other / ".oharness").mkdir(parents=True)
    shutil.copy(project / ".oharness" / "project.json", other / ".oharness")
    token = _cli(home, project, "sync-server", "token", "--user", "ann", "--plan", "paid").strip()
    _cli(other_home, other, "login", "--origin", sync_origin, "--token", token)
    _cli(other_home, other, "sync", "now")

    ui.goto("/memory/notes")
    expect(ui.locator("#live-state")).to_have_attribute("data-state", "live")
    ui.evaluate("window.__not_reloaded = true")
    _cli(
        other_home,
        other,
        "memory",
        "remember",
        "-s",
        "Written on the second device",
        "-b",
        "Synced through the cloud.",
        "--type",
        "project",
    )
    _cli(other_home, other, "sync", "now")
    with httpx2.Client(base_url=page_daemon.url, timeout=60) as api:
        api.headers["Authorization"] = f"Bearer {page_daemon.daemon.token}"
        assert api.post("/sync/now").status_code == 200
    expect(ui.locator("#notes-list")).to_contain_text("Written on the second device")
    assert ui.evaluate("window.__not_reloaded") is True
