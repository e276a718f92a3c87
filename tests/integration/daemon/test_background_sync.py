"""Background sync in a real daemon process: a sign-in is noticed without a restart, a note
written by the CLI meanwhile is uploaded by the daemon's coordinator within its debounce, and
``oharness chat``'s syncer leaves the folders to the daemon."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sync_support import OHARNESS, free_port, run_cli, sync_server_process

from oharness.sdk import DaemonClient
from oharness.sync.daemon_lock import DaemonLock, daemon_running

SECRET = "daemon-sync-secret-0123456789abcdef0123456789"


def _run(home: Path, cwd: Path, *args: str) -> str:
    return run_cli(home, cwd, *args, secret=SECRET)


@pytest.fixture
def sync_server(tmp_path: Path) -> Iterator[str]:
    with sync_server_process(tmp_path / "storage", SECRET) as origin:
        yield origin


def test_cli_write_is_uploaded_by_the_daemon(tmp_path: Path, sync_server: str) -> None:
    home_a, project_a = tmp_path / "home-a", tmp_path / "a"
    home_b, project_b = tmp_path / "home-b", tmp_path / "b"
    project_a.mkdir()
    project_b.mkdir()
    _run(home_a, project_a, "project", "init")
    (project_b / ".oharness").mkdir()
    shutil.copy(project_a / ".oharness" / "project.json", project_b / ".oharness")
    env = {**os.environ, "OHARNESS_HOME": str(home_a)}
    env.pop("OHARNESS_TOKEN", None)
    daemon = subprocess.Popen(
        [str(OHARNESS), "serve", "--port", str(free_port())],
        cwd=project_a,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (home_a / "daemon.json").exists():
            assert daemon.poll() is None and time.monotonic() < deadline, "daemon did not start"
            time.sleep(0.1)
        token = _run(
            home_a, project_a, "sync-server", "token", "--user", "ann", "--plan", "paid"
        ).strip()
        # Signed in while the daemon runs: noticed without a restart.
        _run(home_a, project_a, "login", "--origin", sync_server, "--token", token)
        _run(home_b, project_b, "login", "--origin", sync_server, "--token", token)
        saved = json.loads(
            _run(
                home_a,
                project_a,
                "memory",
                "remember",
                "-s",
                "Deploys happen on Tuesdays",
                "-b",
                "At noon.",
                "--json",
            )
        )
        written = time.monotonic()
        arrived = False
        while time.monotonic() - written < 20:
            _run(home_b, project_b, "sync", "now")
            if (project_b / "MEMORY" / f"{saved['id']}.md").exists():
                arrived = True
                break
            time.sleep(0.5)
        assert arrived, "the daemon never uploaded the CLI's note"
        with DaemonClient(home=home_a) as client:
            status = client.sync_status()
            assert status["enabled"] is True
            off = client.set_sync_enabled(False)
            assert off == {"enabled": False}
        assert json.loads(_run(home_a, project_a, "sync", "status", "--json"))["enabled"] is False
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.communicate(timeout=60)


def test_chat_syncer_leaves_background_sync_to_a_running_daemon(tmp_path: Path) -> None:
    from oharness.harness.memory_sync import MemorySync
    from oharness.memory.workspace import open_workspace
    from oharness.sync.settings_file import SyncSettingsFile

    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    workspace = open_workspace(project, home, register=True)
    SyncSettingsFile(workspace.home).login("http://127.0.0.1:9", "token")
    lock = DaemonLock(home)
    assert lock.acquire()
    try:
        assert daemon_running(home)
        assert not DaemonLock(home).acquire()  # a second daemon is refused
        syncer = MemorySync(workspace, clock=lambda: 0)
        syncer.start()
        assert not syncer.active
        syncer.stop()
    finally:
        lock.release()
    assert not daemon_running(home)
