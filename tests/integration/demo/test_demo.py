"""``oharness demo`` through its entry point (spec 11): from a fresh home to a daemon whose API
shows a waiting conflict, the tidy-up list and backups in under a minute; a clean stop on
SIGINT and SIGTERM; a kill -9 that leaves nothing in the way; a taken port; broken sync."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from demo_support import (
    OHARNESS,
    SENTINEL,
    Demo,
    RealHome,
    free_port,
    port_is_free,
    process_gone,
    wait_until,
)

pytestmark = pytest.mark.slow


def _cli_json(demo: Demo, *args: str) -> dict[str, Any]:
    status = demo.status()
    result = subprocess.run(
        [str(OHARNESS), *args, "--json", "--project", status["project"]],
        env={**os.environ, "OHARNESS_HOME": status["home"]},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode in (0, 3), result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _remember_works(api: httpx2.Client) -> None:
    posted = api.post("/workspace/memory/remember", json={"content": "Local memory still works."})
    assert posted.status_code == 202, posted.text
    task_id = posted.json()["taskId"]
    wait_until(
        lambda: api.get(f"/workspace/memory/remember/{task_id}").json()["status"] == "completed",
        30,
        "the remember task",
    )


def _assert_cleaned_up(demo: Demo, port: int, sync_pid: int | None) -> None:
    assert demo.temp_homes() == [], "the temporary home is still there"
    if sync_pid is not None:
        wait_until(lambda: process_gone(sync_pid), 15, "the sync server to exit")
    wait_until(lambda: port_is_free(port), 15, f"port {port} to be free")


def test_fresh_home_to_conflict_review_and_backups_in_a_minute(
    demo_tmp: Path, real_home: RealHome
) -> None:
    port = free_port()
    demo = Demo(demo_tmp, real_home, "--port", str(port), "--no-open")
    try:
        url, shown_port = demo.page(timeout=60)
        assert shown_port == port
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as browser:
            # The printed link signs a browser in: its cookie then reads the API.
            assert browser.get(url.removeprefix(f"http://127.0.0.1:{port}")).status_code == 200
            conflicts = browser.get("/sync/conflicts").json()["conflicts"]
            status = browser.get("/sync/status").json()
        assert time.monotonic() - demo.started_at < 60, "not ready within a minute"
        (conflict,) = conflicts
        assert conflict["scope"] == "project" and conflict["id"].startswith("deploys-go-out")
        assert "11:00 UTC" in conflict["local"] and "14:00 UTC" in conflict["cloud"]
        assert status["enabled"] is True
        project, user = status["scopes"]
        assert project["conflicts"] == [conflict["id"]] and project["lastError"] is None
        assert project["lastPull"]["added"] == 1  # the other device's new note
        assert user["account"] == "demo-user" and user["lastError"] is None

        findings = _cli_json(demo, "memory", "review")["findings"]
        kinds = {finding["kind"] for finding in findings}
        assert {"same-topic", "broken-link", "unused"} <= kinds
        reasons = {backup["reason"] for backup in _cli_json(demo, "memory", "backups")["backups"]}
        assert {"remember-update", "forget"} <= reasons
        listed = _cli_json(demo, "memory", "list")["notes"]
        assert {note["scope"] for note in listed} == {"project", "user"}
        assert len(listed) >= 15

        root = Path(demo.status()["root"])
        stored = b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())
        assert SENTINEL.encode() not in stored, "something of the real home was copied"
        sync_pid = demo.status()["syncServer"]["pid"]
        assert demo.stop(signal.SIGINT) == 0
    finally:
        demo.kill()
    _assert_cleaned_up(demo, port, sync_pid)
    assert SENTINEL not in demo.output
    assert "demo stopped; its temporary home is removed" in demo.output


def test_sync_server_killed_shows_an_error_then_sigterm_cleans_up(
    demo_tmp: Path, real_home: RealHome
) -> None:
    port = free_port()
    demo = Demo(demo_tmp, real_home, "--port", str(port), "--no-open")
    try:
        demo.page()
        sync_pid = demo.status()["syncServer"]["pid"]
        os.kill(sync_pid, signal.SIGKILL)
        demo.wait_for(r"the demo's sync server stopped", timeout=30)
        with demo.api(port) as api:
            _remember_works(api)  # the write also asks for a pass, which cannot reach it
            demo.wait_for(r"sync error \(project notes\): .*", timeout=60)
            wait_until(
                lambda: api.get("/sync/status").json()["scopes"][0]["lastError"] is not None,
                30,
                "the error in the API",
            )
        assert demo.stop(signal.SIGTERM) == 0
    finally:
        demo.kill()
    _assert_cleaned_up(demo, port, sync_pid)


def test_kill_9_leaves_nothing_that_breaks_the_next_start(
    demo_tmp: Path, real_home: RealHome
) -> None:
    port = free_port()
    first = Demo(demo_tmp, real_home, "--port", str(port), "--no-open")
    try:
        first.page()
        sync_pid = first.status()["syncServer"]["pid"]
        stale = first.temp_homes()
    finally:
        first.kill()
    # The sync server sees its parent gone (its stdin closes) and stops by itself.
    wait_until(lambda: process_gone(sync_pid), 20, "the orphaned sync server to exit")
    assert first.temp_homes() == stale  # left behind by the kill ...
    second = Demo(demo_tmp, real_home, "--port", str(port), "--no-open", "--no-sync-server")
    try:
        _, second_port = second.page()
        assert second_port == port  # the killed demo's port is usable again
        assert f"removed the temporary home of a demo that was killed: {stale[0]}" in (
            second.output
        )
        assert not stale[0].exists() and len(second.temp_homes()) == 1
        assert second.stop() == 0
    finally:
        second.kill()
    _assert_cleaned_up(second, port, None)


def test_a_taken_port_gives_a_free_one_and_the_browser_opens_the_link(
    demo_tmp: Path, real_home: RealHome, tmp_path: Path
) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{opened}"\n')
    browser.chmod(0o755)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        demo = Demo(
            demo_tmp, real_home, "--port", str(port), "--no-sync-server", BROWSER=str(browser)
        )
        try:
            url, shown_port = demo.page()
            assert shown_port != port
            demo.wait_for(rf"port {port} is taken; using the free port {shown_port} instead")
            wait_until(opened.exists, 30, "the browser to be started")
            assert opened.read_text().split() == [url]
            with httpx2.Client(base_url=f"http://127.0.0.1:{shown_port}", timeout=30) as client:
                assert client.get(url.split(str(shown_port), 1)[1]).status_code == 200
            assert demo.stop() == 0
        finally:
            demo.kill()
    _assert_cleaned_up(demo, shown_port, None)


def test_no_sync_server_shows_the_sync_error_and_local_memory_works(
    demo_tmp: Path, real_home: RealHome
) -> None:
    port = free_port()
    demo = Demo(demo_tmp, real_home, "--port", str(port), "--no-sync-server")
    try:
        demo.page()
        assert "no browser here" in demo.output  # no DISPLAY, no BROWSER: never fails
        demo.wait_for(r"sync error \(project notes\): not signed in")
        demo.wait_for(r"sync error \(user notes\): not signed in")
        with demo.api(port) as api:
            status = api.get("/sync/status").json()
            assert [s["lastError"]["code"] for s in status["scopes"]] == ["not_logged_in"] * 2
            assert api.get("/sync/conflicts").json()["conflicts"] == []
            _remember_works(api)
        findings = _cli_json(demo, "memory", "review")["findings"]
        assert any(finding["kind"] == "same-topic" for finding in findings)
        assert demo.stop() == 0
    finally:
        demo.kill()
    _assert_cleaned_up(demo, port, None)


def _processes_naming(text: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes() and not process_gone(int(cmdline.parent.name)):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stopped_while_starting_removes_everything(
    demo_tmp: Path, real_home: RealHome, signum: int
) -> None:
    port = free_port()
    demo = Demo(demo_tmp, real_home, "--port", str(port), "--no-open")
    try:
        root = demo.wait_for(r"temporary home: (\S+)").group(1)
        assert demo.stop(signum) == 130  # interrupted while the sample memory was written
    finally:
        demo.kill()
    assert "open the Memory page" not in demo.output
    assert not Path(root).exists() and demo.temp_homes() == []
    wait_until(lambda: _processes_naming(root) == [], 15, "the sync server to exit")
    wait_until(lambda: port_is_free(port), 15, f"port {port} to be free")
