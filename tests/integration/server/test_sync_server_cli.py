"""``oharness sync-server serve|token`` through the installed ``oharness`` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from sync_server_support import SECRET
from sync_support import free_port

from oharness.server.auth import TokenVerifier
from oharness.server.config import JwtSettings

OHARNESS = Path(sys.executable).with_name("oharness")


def environment(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OHARNESS_SYNC_", "AWS_"))}
    env.update(values)
    return env


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(OHARNESS), "sync-server", *args],
        capture_output=True,
        text=True,
        env=environment(**env),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_token_mints_a_token_the_server_accepts() -> None:
    result = run("token", "--user", "alice", "--plan", "paid", OHARNESS_SYNC_JWT_SECRET=SECRET)
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    principal = TokenVerifier(JwtSettings(secret=SECRET)).verify(f"Bearer {token}")
    assert principal.user_id == "alice" and principal.claimed_plan == "paid"
    result = run(
        "token",
        "--user",
        "bob",
        "--team",
        "t1:paid",
        "--team",
        "t2:free",
        "--ttl",
        "60",
        "--json",
        OHARNESS_SYNC_JWT_SECRET=SECRET,
    )
    data = json.loads(result.stdout)
    assert data["plan"] == "free" and data["teams"] == [
        {"id": "t1", "plan": "paid"},
        {"id": "t2", "plan": "free"},
    ]
    assert data["expiresAt"] <= (time.time() + 61) * 1000
    principal = TokenVerifier(JwtSettings(secret=SECRET)).verify(f"Bearer {data['token']}")
    assert principal.claimed_plan == "paid"  # through the team


def test_token_errors() -> None:
    assert "OHARNESS_SYNC_JWT_SECRET" in one_line_error(run("token", "--user", "a"))
    assert "32 bytes" in one_line_error(
        run("token", "--user", "a", OHARNESS_SYNC_JWT_SECRET="short")
    )
    bad_team = run("token", "--user", "a", "--team", "t1", OHARNESS_SYNC_JWT_SECRET=SECRET)
    assert bad_team.returncode == 2 and "ID:PLAN" in bad_team.stderr


def test_serve_refuses_to_start_without_a_working_configuration(tmp_path: Path) -> None:
    missing_storage = one_line_error(run("serve", OHARNESS_SYNC_JWT_SECRET=SECRET))
    assert "OHARNESS_SYNC_STORAGE" in missing_storage
    missing_key = one_line_error(run("serve", "--storage", str(tmp_path / "s")))
    assert "OHARNESS_SYNC_JWT_SECRET" in missing_key
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    broken = one_line_error(
        run("serve", "--storage", f"file://{blocker}/sub", OHARNESS_SYNC_JWT_SECRET=SECRET)
    )
    assert "does not answer" in broken
    bad_url = one_line_error(run("serve", "--storage", "ftp://x", OHARNESS_SYNC_JWT_SECRET=SECRET))
    assert "not supported" in bad_url
    bad_quota = one_line_error(
        run(
            "serve",
            "--storage",
            str(tmp_path / "s"),
            OHARNESS_SYNC_JWT_SECRET=SECRET,
            OHARNESS_SYNC_MAX_NOTES="lots",
        )
    )
    assert "OHARNESS_SYNC_MAX_NOTES" in bad_quota


@pytest.mark.slow
def test_serve_runs_end_to_end(tmp_path: Path) -> None:
    port = free_port()
    env = environment(OHARNESS_SYNC_JWT_SECRET=SECRET, OHARNESS_SYNC_ADMIN_KEY="k" * 32)
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(
        [
            str(OHARNESS),
            "sync-server",
            "serve",
            "--storage",
            f"file://{tmp_path / 'storage'}",
            "--port",
            str(port),
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        token = run("token", "--user", "alice", OHARNESS_SYNC_JWT_SECRET=SECRET).stdout.strip()
        headers = {"Authorization": f"Bearer {token}", "X-Request-Id": "cli-test-1"}
        identity = httpx2.get(f"{base}/v1/memory/identity", headers=headers, timeout=10)
        assert identity.status_code == 200 and identity.json()["userId"] == "alice"
        assert "server" not in identity.headers
    finally:
        process.terminate()
        process.wait(timeout=15)
        log.close()
    lines = [line for line in (tmp_path / "server.log").read_text().splitlines() if line]
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    requests = [e for e in entries if e.get("event") == "request" and e.get("requestId")]
    assert any(e["requestId"] == "cli-test-1" and e["status"] == 200 for e in requests)
    assert token not in "\n".join(lines)


def test_a_busy_port_is_one_clear_line() -> None:
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run(
            "serve", "--storage", "memory://", "--port", str(port), OHARNESS_SYNC_JWT_SECRET=SECRET
        )
    message = one_line_error(result)
    assert f"cannot listen on 127.0.0.1:{port}" in message and "--port" in message


def test_a_bad_storage_flag_is_named_as_the_flag() -> None:
    result = run("serve", "--storage", "ftp://x", OHARNESS_SYNC_JWT_SECRET=SECRET)
    message = one_line_error(result)
    assert "--storage" in message and "OHARNESS_SYNC_STORAGE" not in message
