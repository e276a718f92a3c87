"""``$OHARNESS_HOME`` is private under umask 022: after the CLI, hooks and the daemon, and when an
existing home was left readable; a project's ``MEMORY/`` keeps the repository's modes."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from tests.integration.bridges.runner import OHARNESS, ok, run


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def loose_entries(home: Path) -> list[str]:
    """Every entry of the home (the home too) that others could read, write or enter."""
    found = []
    for path in [home, *home.rglob("*")]:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        mode = stat.S_IMODE(info.st_mode)
        wanted = 0o700 if stat.S_ISDIR(info.st_mode) else 0o600
        if mode & 0o077 or (mode & wanted) != wanted:
            found.append(f"{oct(mode)} {path.relative_to(home.parent)}")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _hook(home: Path, project: Path, event: str, **payload: str) -> None:
    body = json.dumps({"session_id": "s1", "cwd": str(project), **payload})
    result = run(home, project, "hook", "claude-code", event, input=body)
    assert result.returncode == 0, result.stderr


def _daemon_round(home: Path, project: Path) -> None:
    process = subprocess.Popen(
        [str(OHARNESS), "serve", "--port", str(_free_port())],
        cwd=project,
        env={**os.environ, "OHARNESS_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (home / "daemon.json").exists():
            assert process.poll() is None and time.monotonic() < deadline, "daemon did not start"
            time.sleep(0.05)
        url = json.loads((home / "daemon.json").read_text("utf-8"))["url"]
        token = (home / "daemon-token").read_text("utf-8").strip()
        headers = {"Authorization": f"Bearer {token}"}
        with httpx2.Client(base_url=url, headers=headers, timeout=30) as http:
            for content in ("The mailer deploys Monday at 13:00.", "I prefer short answers."):
                task = http.post("/workspace/memory/remember", json={"content": content})
                assert task.status_code == 202, task.text
                path = f"/workspace/memory/remember/{task.json()['taskId']}"
                while http.get(path).json()["status"] not in ("completed", "failed"):
                    time.sleep(0.05)
            assert http.post("/workspace/recall", json={"message": "mailer deploy"}).is_success
        _hook(home, project, "user-prompt-submit", prompt="when does the mailer deploy?")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def test_a_home_used_by_cli_hooks_and_daemon_is_private(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    ok(home, project, "project", "init")
    saved = json.loads(
        ok(home, project, "memory", "remember", "-s", "Billing deploys Monday", "-b", "At 8:00.",
           "--json").stdout
    )  # fmt: skip
    ok(home, project, "memory", "remember", "-s", "Terse answers", "-b", "Code first.",
       "--scope", "user")  # fmt: skip
    ok(home, project, "memory", "remember", "--id", saved["id"], "-s", "Billing deploys Monday",
       "-b", "At 9:00.")  # fmt: skip
    ok(home, project, "memory", "recall", "when does billing deploy?")
    ok(home, project, "memory", "index")
    _hook(home, project, "session-start", source="startup")
    _hook(home, project, "user-prompt-submit", prompt="when does billing deploy?")
    _daemon_round(home, project)
    ok(home, project, "memory", "forget", saved["id"], "--yes")
    assert (home / "memory-backups").is_dir() and (home / "daemon-token").exists()
    assert loose_entries(home) == []
    # The project's notes keep the repository's modes.
    note = next((project / "MEMORY").glob("*.md"))
    assert stat.S_IMODE(note.stat().st_mode) == 0o644
    assert stat.S_IMODE((project / "MEMORY").stat().st_mode) == 0o755


def test_a_loose_home_is_tightened_once_with_one_notice(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    ok(home, project, "memory", "remember", "-s", "Terse answers", "-b", "Code first.",
       "--scope", "user")  # fmt: skip
    (home / "stray.txt").write_text("left by another tool")
    outside = tmp_path / "outside.txt"
    outside.write_text("not the home's")
    (home / "link.txt").symlink_to(outside)
    for path in [home, *home.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert loose_entries(home)
    first = ok(home, project, "memory", "list")
    assert first.stderr.count("notice:") == 1 and "yours alone" in first.stderr
    assert loose_entries(home) == []
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644  # a link is not followed
    again = ok(home, project, "memory", "list")
    assert "notice:" not in again.stderr
