"""A page left open while its daemon restarts says to sign in again (docs/page.md): the event
stream cannot say why it fails, so the page looks (a 401 from the new daemon)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
from playwright.sync_api import Browser, expect


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(home: Path, project: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OHARNESS_HOME": str(home)}
    command = [sys.executable, "-m", "oharness.cli.main", "serve", "--port", str(port)]
    return subprocess.Popen(
        [*command, "--project", str(project)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _started(home: Path, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the daemon exited"
        try:
            return str(json.loads((home / "daemon.json").read_text())["url"])
        except (OSError, ValueError, KeyError):
            time.sleep(0.1)
    raise AssertionError("the daemon did not start")


def test_a_page_open_across_a_daemon_restart_says_to_sign_in_again(
    browser: Browser, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    port = _free_port()
    first = _serve(home, project, port)
    second = None
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        url = _started(home, first)
        token = (home / "daemon-token").read_text().strip()
        link = httpx2.post(f"{url}/auth/link", headers={"Authorization": f"Bearer {token}"})
        page = context.new_page()
        page.goto(link.json()["url"])
        page.wait_for_url("**/memory/notes")
        expect(page.locator("#live-state")).to_have_attribute("data-state", "live")
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
        second = _serve(home, project, port)
        _started(home, second)
        expect(page.locator("#page-status")).to_contain_text("signed out", timeout=30_000)
    finally:
        context.close()
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=30)
