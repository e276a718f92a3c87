"""Several ``oharness sync-server serve`` processes on one storage (docs/scaling.md).

Three real server processes, started through the installed entry point, share one file store
or one SeaweedFS bucket, as replicas behind a load balancer would. 50 writers spread over them
each create a note and increment one shared counter with per-note compare-and-swap: versions
are contiguous, no update is lost. Then the account is erased through one instance and every
instance refuses it at once — an idle check it had cached, a listing, identity and a commit.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sync_server_support import (
    ADMIN_KEY,
    CLIENTS,
    COUNTER,
    SECRET,
    Api,
    Client,
    counter_value,
    note_text,
    put,
    token_for,
)
from sync_support import free_port, run_together

from s3server import S3Server

OHARNESS = Path(sys.executable).with_name("oharness")
INSTANCES = 3


@contextlib.contextmanager
def instances(storage: str, extra_env: dict[str, str], log_dir: Path) -> Iterator[list[str]]:
    """``INSTANCES`` server processes over ``storage``; yields their base URLs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OHARNESS_SYNC_", "AWS_"))}
    env.update(
        extra_env,
        OHARNESS_SYNC_JWT_SECRET=SECRET,
        OHARNESS_SYNC_ADMIN_KEY=ADMIN_KEY,
        OHARNESS_SYNC_RATE_PER_MINUTE="0",
    )
    processes: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for index in range(INSTANCES):
            port = free_port()
            command = [str(OHARNESS), "sync-server", "serve", "--storage", storage]
            command += ["--host", "127.0.0.1", "--port", str(port)]
            log = open(log_dir / f"instance-{index}.log", "wb")  # noqa: SIM115 (closed below)
            processes.append(
                subprocess.Popen(
                    command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            log.close()
            urls.append(f"http://127.0.0.1:{port}")
        for url, process in zip(urls, processes, strict=True):
            wait_until_healthy(url, process)
        yield urls
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_until_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server at {url} exited with {process.returncode}"
        with contextlib.suppress(httpx2.HTTPError):
            if httpx2.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError(f"the server at {url} did not become healthy")


def idle_body(seen: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocol": 2,
        "scope": {"kind": "project", "projectId": "git-abc"},
        "since": seen["version"],
        "generation": seen["generation"],
        "sinceCommit": seen["commit"],
    }


def run_writers(urls: list[str]) -> list[Client]:
    clients = [Client(urls[i % len(urls)], i) for i in range(CLIENTS)]
    try:
        run_together([client.run for client in clients])
    finally:
        for client in clients:
            client.http.close()
    return clients


def check_every_instance(urls: list[str], clients: list[Client]) -> dict[str, Any]:
    versions = sorted(v for client in clients for v in client.versions)
    assert versions == list(range(1, 2 * CLIENTS + 1)), "a version was duplicated or skipped"
    answers = []
    for url in urls:
        with httpx2.Client(base_url=url, timeout=60) as http:
            answers.append(Api(http, token_for("alice")).ok_snapshot())
    final = answers[0]
    assert all(answer["version"] == 2 * CLIENTS for answer in answers)
    assert len({answer["commit"] for answer in answers}) == 1
    notes = {note["id"]: note for note in final["notes"]}
    assert set(notes) == {COUNTER} | {f"client-{i}" for i in range(CLIENTS)}
    assert counter_value(final["objects"][notes[COUNTER]["rev"]]) == CLIENTS, "a lost update"
    return final


def check_erase_everywhere(urls: list[str], final: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {token_for('alice')}"}
    for url in urls:  # every instance has the scope's head cached
        answer = httpx2.post(f"{url}/v1/memory/snapshot", json=idle_body(final), headers=headers)
        assert answer.json()["unchanged"] is True
    erased = httpx2.post(
        f"{urls[1]}/v1/admin/erase",
        json={"userId": "alice"},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        timeout=120,
    )
    assert erased.status_code == 200, erased.text
    for url in urls:
        with httpx2.Client(base_url=url, timeout=60, headers=headers) as http:
            idle = http.post("/v1/memory/snapshot", json=idle_body(final))
            assert idle.status_code == 403 and idle.json()["error"] == "account_erased"
            full = http.post("/v1/memory/snapshot", json={**idle_body(final), "since": None})
            assert full.status_code == 403
            assert http.get("/v1/memory/identity").status_code == 403
            body = {
                "protocol": 2,
                "scope": {"kind": "project", "projectId": "git-abc"},
                "changes": [put("late-1", note_text("late-1"))],
            }
            assert http.post("/v1/memory/commit", json=body).status_code == 403


@pytest.mark.slow
def test_three_processes_on_one_file_store(tmp_path: Path) -> None:
    with instances(f"file://{tmp_path / 'storage'}", {}, tmp_path) as urls:
        final = check_every_instance(urls, run_writers(urls))
        check_erase_everywhere(urls, final)
    assert not list((tmp_path / "storage" / "users").rglob("*.md"))


@pytest.mark.slow
@pytest.mark.service
def test_three_processes_on_one_s3_bucket(s3_server: S3Server, tmp_path: Path) -> None:
    storage = f"s3://{s3_server.bucket}/instances-{uuid.uuid4().hex}"
    with instances(storage, s3_server.environ(), tmp_path) as urls:
        final = check_every_instance(urls, run_writers(urls))
        check_erase_everywhere(urls, final)
