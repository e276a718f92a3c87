"""The SDK against a live daemon (sync and async); ``oharness serve`` through its entry point."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from daemon_support import LiveDaemon, live_daemon
from sync_support import free_port

from oharness.daemon import DaemonOptions
from oharness.sdk import AsyncDaemonClient, DaemonClient, DaemonError


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    project = tmp_path / "project"
    project.mkdir()
    options = DaemonOptions(home=tmp_path / "home", start=project, background_sync=False)
    with live_daemon(options) as running:
        yield running


def test_sdk_sync_round_trip_and_events(daemon: LiveDaemon) -> None:
    seen: list[dict[str, Any]] = []
    with DaemonClient(daemon.url, daemon.token, client_id="sdk-test") as client:
        assert "workspace_memory_remember" in client.capabilities()["capabilities"]

        def listen() -> None:
            with DaemonClient(daemon.url, daemon.token) as listener:
                for event in listener.events():
                    seen.append(event)
                    if event["type"] == "workspace.memory.changed":
                        return

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30  # the listener hears events once it has subscribed
        while daemon.state.bus.subscribers == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        task = client.remember_workspace_memory("Deploys use blue-green.", context_mode="clean")
        assert task["status"] == "queued" and task["contextMode"] == "clean"
        done = client.wait(task)
        assert done["status"] == "completed"
        assert client.get_workspace_memory_remember_task(task["taskId"])["status"] == "completed"
        forgot = client.wait(client.forget_workspace_memory("blue-green deploys"))
        assert len(forgot["result"]["removedEntries"]) == 1
        dream = client.wait(client.dream_workspace_memory())
        assert dream["error"]["code"] == "dream_failed"
        thread.join(10)
    changed = [event for event in seen if event["type"] == "workspace.memory.changed"]
    assert changed and changed[0]["originatorClientId"] == "sdk-test"
    assert changed[0]["data"]["source"] == "workspace_memory_remember"


def test_sdk_errors_are_typed(daemon: LiveDaemon) -> None:
    with DaemonClient(daemon.url, daemon.token) as client:
        with pytest.raises(DaemonError) as caught:
            client.remember_workspace_memory("   ")
        assert caught.value.status == 400 and caught.value.code == "invalid_content"
        with pytest.raises(DaemonError) as caught:
            client.get_workspace_memory_forget_task("forget-nope")
        assert caught.value.status == 404 and caught.value.code == "forget_task_not_found"
    with DaemonClient(daemon.url, "wrong") as client, pytest.raises(DaemonError) as caught:
        client.capabilities()
    assert caught.value.status == 401 and caught.value.code == "token_required"


def test_async_sdk(daemon: LiveDaemon) -> None:
    async def run() -> dict[str, Any]:
        async with AsyncDaemonClient(daemon.url, daemon.token, client_id="async") as client:
            caps = await client.capabilities()
            assert "workspace_memory_forget" in caps["capabilities"]
            task = await client.remember_workspace_memory("Async notes are fine.", scope="user")
            assert task["scope"] == "user"
            done = await client.wait(task)
            with pytest.raises(DaemonError):
                await client.get_workspace_memory_dream_task(task["taskId"])
            return done

    done = asyncio.run(run())
    assert done["result"]["touchedScopes"] == ["user"]


def test_recall_endpoint(daemon: LiveDaemon) -> None:
    with DaemonClient(daemon.url, daemon.token) as client:
        client.wait(
            client.remember_workspace_memory(
                "The billing service retries webhooks with exponential backoff."
            )
        )
        found = client.recall("why does billing retry webhooks?")
        assert "<recalled-memory>" in found["block"]
        (attached,) = found["attached"]
        again = client.recall(
            "why does billing retry webhooks?", exclude=[f"{attached['scope']}:{attached['id']}"]
        )
        assert again["block"] == "" and again["attached"] == []


# ---- auth for browsers -------------------------------------------------------------------------


def test_page_cookie_csrf_and_host_checks(daemon: LiveDaemon) -> None:
    auth = daemon.state.auth
    code = auth.page_code
    with httpx2.Client(base_url=daemon.url) as browser:
        signed = browser.get(f"/auth?code={code}")
        assert signed.status_code == 200
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert browser.get(f"/auth?code={code}").status_code == 401  # one time only
        assert browser.get("/capabilities").status_code == 200
        posted = browser.post("/workspace/memory/remember", json={"content": "From the page."})
        assert posted.status_code == 401  # no CSRF token
        csrf = browser.get("/auth/csrf").json()["csrfToken"]
        posted = browser.post(
            "/workspace/memory/remember",
            json={"content": "From the page."},
            headers={"X-CSRF-Token": csrf},
        )
        assert posted.status_code == 202
        evil = browser.post(
            "/workspace/memory/remember",
            json={"content": "x"},
            headers={"X-CSRF-Token": csrf, "Origin": "https://evil.example"},
        )
        assert evil.status_code == 403
    with daemon.client(headers={"Host": "evil.example"}) as rebinding:
        response = rebinding.get("/capabilities")
        assert response.status_code == 403 and response.json()["code"] == "host_not_allowed"
    with daemon.client() as http:
        preflight = http.options(
            "/workspace/memory/remember", headers={"Origin": "https://evil.example"}
        )
        assert "access-control-allow-origin" not in preflight.headers


def test_token_file_is_private_and_kept(daemon: LiveDaemon) -> None:
    path = daemon.options.home / "daemon-token"
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text().strip() == daemon.token


# ---- oharness serve ----------------------------------------------------------------------------


def _serve(home: Path, project: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "OHARNESS_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "oharness.cli.main", "serve", "--port", str(port), *extra],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_info(home: Path, process: subprocess.Popen[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.stderr.read() if process.stderr else "exited")
        try:
            return dict(json.loads((home / "daemon.json").read_text()))
        except (OSError, ValueError):
            time.sleep(0.1)
    raise AssertionError("the daemon did not start")


def test_serve_single_instance_and_clean_shutdown(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    port = free_port()
    first = _serve(home, project, port, "--project", str(project))  # a folder named registers
    try:
        info = _wait_for_info(home, first)
        assert info["url"] == f"http://127.0.0.1:{port}"
        second = _serve(home, project, free_port())
        _, err = second.communicate(timeout=60)
        assert second.returncode == 1
        assert "already runs" in err and info["url"] in err
        other = _serve(tmp_path / "other-home", project, port)  # another home, the same port
        _, err = other.communicate(timeout=60)
        assert other.returncode == 1 and err.startswith("oharness: error: cannot listen on")
        assert "--port" in err and len(err.strip().splitlines()) == 1
        with DaemonClient(home=home) as client:
            task = client.remember_workspace_memory("Served by a real process.")
            client.wait(task)
        listener = DaemonClient(home=home)
        stream = threading.Thread(target=lambda: list(_safe_events(listener)), daemon=True)
        stream.start()  # an open event stream must not hold up the stop
        time.sleep(0.5)
        stopping = time.monotonic()
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=60)
        assert time.monotonic() - stopping < 8
        stream.join(10)
        listener.close()
        assert first.returncode == 0, err
        assert "/auth?code=" in err
        assert not (home / "daemon.json").exists()
        assert len(list((project / "MEMORY").glob("*.md"))) == 1
        assert not list((project / "MEMORY").glob(".*tmp*"))
    finally:
        if first.poll() is None:
            first.kill()


def _safe_events(client: DaemonClient) -> Iterator[dict[str, Any]]:
    try:
        yield from client.events()
    except DaemonError:
        return


def test_non_loopback_host_warns(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    process = _serve(home, project, free_port(), "--host", "0.0.0.0")
    try:
        _wait_for_info(home, process)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert "WARNING" in err and "not loopback" in err
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.parametrize("kind", ["systemd", "launchd"])
def test_print_service(tmp_path: Path, kind: str) -> None:
    env = {**os.environ, "OHARNESS_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "oharness.cli.main", "serve", "--print-service", kind],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "serve" in done.stdout and str(tmp_path / "home") in done.stdout
    if kind == "systemd":
        assert "ExecStart=" in done.stdout and "WantedBy=default.target" in done.stdout
    else:
        assert "<key>RunAtLoad</key>" in done.stdout
    assert not (tmp_path / "home").exists()  # printing installs nothing
