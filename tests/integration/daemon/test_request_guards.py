"""The daemon's guards over real HTTP on loopback: the own-origin rule (port included), the
security headers on every answer, the body cap refused while streaming, the back-off for wrong
credentials, and every state-changing route refused without its credentials or CSRF token."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from daemon_support import LiveDaemon, project_daemon

from oharness.daemon.guards import CONTENT_SECURITY_POLICY, MAX_BODY_BYTES
from oharness.daemon.page import page_router

UNSAFE = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    with project_daemon(tmp_path) as running:
        running.state.auth.backoff.tarpit = 0.0  # the pause itself is timed in its own test
        yield running


@contextlib.contextmanager
def _signed_in(daemon: LiveDaemon) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=daemon.url, timeout=30) as browser:
        code = daemon.state.auth.page_code
        assert browser.get(f"/auth?code={code}").status_code == 200
        yield browser


# ---- Origin ------------------------------------------------------------------------------------


def test_an_origin_on_another_port_of_localhost_is_refused(daemon: LiveDaemon) -> None:
    port = daemon.port
    other = port + 1 if port < 65535 else port - 1
    with daemon.client() as http:
        for origin in (
            f"http://127.0.0.1:{other}",
            f"http://localhost:{other}",
            "http://127.0.0.1",
        ):
            for method, path in (("GET", "/capabilities"), ("POST", "/workspace/memory/dream")):
                answer = http.request(method, path, headers={"Origin": origin})
                assert answer.status_code == 403, (origin, method)
                assert answer.json()["code"] == "origin_not_allowed"
        for origin in ("null", "file://", f"ftp://127.0.0.1:{port}", f"http://evil.example:{port}"):
            assert http.get("/capabilities", headers={"Origin": origin}).status_code == 403
        for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
            answer = http.post("/workspace/memory/dream", headers={"Origin": origin})
            assert answer.status_code == 202, origin


def test_the_page_posts_from_its_own_origin_only(daemon: LiveDaemon) -> None:
    csrf = {"X-CSRF-Token": daemon.state.auth.csrf_token}
    form = {"id": "", "hash": "", "summary": "Deploys run on Fridays", "type": "", "tags": ""}
    form |= {"scope": "", "body": "Deploys run on Fridays."}
    with _signed_in(daemon) as browser:
        other = {**csrf, "Origin": f"http://localhost:{daemon.port + 1}"}
        assert browser.post("/memory/notes/save", data=form, headers=other).status_code == 403
        assert not list((daemon.options.start / "MEMORY").glob("*.md"))
        own = {**csrf, "Origin": f"http://127.0.0.1:{daemon.port}"}
        assert browser.post("/memory/notes/save", data=form, headers=own).status_code < 300
        assert len(list((daemon.options.start / "MEMORY").glob("*.md"))) == 1


# ---- security headers --------------------------------------------------------------------------


def test_every_answer_carries_the_security_headers(daemon: LiveDaemon) -> None:
    with _signed_in(daemon) as browser, daemon.client() as http:
        answers = [
            browser.get("/memory/notes", headers={"Accept": "text/html"}),
            browser.get("/memory/static/page.js"),
            browser.get("/capabilities"),
            http.post("/workspace/recall", json={"message": "deploys"}),  # the fast path
            http.get("/no/such/route"),
        ]
    with httpx2.Client(base_url=daemon.url) as anonymous:
        answers.append(
            anonymous.get("/memory/notes", headers={"Accept": "text/html"})
        )  # sign-in page
        answers.append(anonymous.get("/capabilities"))
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 404, 401, 401]
    assert "text/html" in answers[0].headers["content-type"]
    for answer in answers:
        policy = answer.headers["content-security-policy"]
        assert policy == CONTENT_SECURITY_POLICY
        assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
        assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["referrer-policy"] == "no-referrer"


# ---- the body cap ------------------------------------------------------------------------------


def _raw_post(
    port: int, token: str, path: str, head: str, chunks: Iterator[bytes]
) -> tuple[str, int]:
    """POST over a raw socket, writing ``chunks`` until the daemon answers or closes: the
    status line and how many body bytes were written."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        request = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"{head}\r\n"
        )
        sock.sendall(request.encode())
        try:
            for chunk in chunks:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:  # the daemon answered and closed: it stopped reading
            pass
        answer = b""
        try:
            while b"\r\n" not in answer:
                part = sock.recv(4096)
                if not part:
                    break
                answer += part
        except OSError:
            pass
    return answer.split(b"\r\n", 1)[0].decode(), sent


def _chunked(total: int, size: int = 256 * 1024) -> Iterator[bytes]:
    """A chunked JSON body of about ``total`` bytes that never ends in time."""
    yield b"d\r\n" + b'{"content": "' + b"\r\n"
    piece = f"{size:x}\r\n".encode() + b"a" * size + b"\r\n"
    for _ in range(total // size):
        yield piece


@pytest.mark.parametrize("path", ["/workspace/memory/remember", "/workspaces", "/workspace/recall"])
def test_a_declared_body_over_the_cap_is_refused_before_it_is_read(
    daemon: LiveDaemon, path: str
) -> None:
    with daemon.client() as http:
        answer = http.post(path, content=b"x" * (MAX_BODY_BYTES + 1))
    assert answer.status_code == 413 and answer.json()["code"] == "body_too_large"
    with daemon.client() as http:
        assert http.post(path, content=b"{").status_code == 400  # one byte less: read, refused


@pytest.mark.parametrize("path", ["/workspace/memory/remember", "/workspaces", "/workspace/recall"])
def test_a_streamed_body_is_refused_as_it_passes_the_cap(daemon: LiveDaemon, path: str) -> None:
    chunked = "Transfer-Encoding: chunked\r\n"
    status, sent = _raw_post(daemon.port, daemon.token, path, chunked, _chunked(64 << 20))
    assert status.startswith("HTTP/1.1 413"), status
    assert sent < 64 * 1024 * 1024  # the daemon stopped reading long before the end
    assert not daemon.state.registry.default.lane._tasks


def _memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for process {pid}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_a_200_mib_body_does_not_raise_the_daemons_memory(tmp_path: Path) -> None:
    """``oharness serve`` in its own process: its peak resident memory (VmHWM) before and
    after 200 MiB bodies, declared and streamed, to the two routes that read big bodies."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "OHARNESS_HOME": str(home)}
    command = [sys.executable, "-m", "oharness.cli.main", "serve", "--port", "0"]
    process = subprocess.Popen(
        command, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        info = _daemon_info(home, process)
        port, token = int(info["port"]), (home / "daemon-token").read_text().strip()
        with httpx2.Client(
            base_url=info["url"], headers={"Authorization": f"Bearer {token}"}
        ) as http:
            assert (
                http.post("/workspace/memory/remember", json={"content": "Warm."}).status_code
                == 202
            )
            assert http.post("/workspace/recall", json={"message": "warm"}).status_code == 200
        before = _memory_kib(process.pid, "VmHWM")
        size = 200 << 20
        for path in ("/workspace/memory/remember", "/workspaces"):
            declared = f"Content-Length: {size}\r\n"
            status, _ = _raw_post(port, token, path, declared, _chunked(size))
            assert status.startswith("HTTP/1.1 413"), status
            chunked = "Transfer-Encoding: chunked\r\n"
            status, sent = _raw_post(port, token, path, chunked, _chunked(size))
            assert status.startswith("HTTP/1.1 413"), status
            assert sent < size
        grown = _memory_kib(process.pid, "VmHWM") - before
        print(f"daemon VmHWM before {before} KiB, after {before + grown} KiB")
        assert grown < 16 * 1024, f"the daemon's peak memory grew by {grown} KiB"
    finally:
        process.terminate()
        process.wait(timeout=60)


def _daemon_info(home: Path, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the daemon exited"
        try:
            return dict(json.loads((home / "daemon.json").read_text()))
        except (OSError, ValueError):
            time.sleep(0.1)
    raise AssertionError("the daemon did not start")


# ---- wrong credentials -------------------------------------------------------------------------


def test_wrong_tokens_are_slowed_and_the_right_one_still_passes(daemon: LiveDaemon) -> None:
    backoff = daemon.state.auth.backoff
    with daemon.client(token="wrong-token") as guessing, daemon.client() as right:
        for _ in range(backoff.free):
            assert guessing.get("/capabilities").status_code == 401
        waits = []
        for _ in range(4):
            answer = guessing.get("/capabilities")
            assert answer.status_code == 429 and answer.json()["code"] == "too_many_attempts"
            waits.append(int(answer.headers["retry-after"]))
            assert right.get("/capabilities").status_code == 200
        assert waits == [1, 2, 4, 8]
    with httpx2.Client(base_url=daemon.url) as anonymous:  # no credential at all: not a guess
        assert anonymous.get("/capabilities").status_code == 401


def test_wrong_csrf_tokens_and_sign_in_codes_count_too(daemon: LiveDaemon) -> None:
    backoff = daemon.state.auth.backoff
    with _signed_in(daemon) as browser:
        for _ in range(backoff.free):
            answer = browser.post("/workspace/memory/dream", headers={"X-CSRF-Token": "guess"})
            assert answer.status_code == 401
        assert browser.get("/auth?code=guess").status_code == 429
        good = {"X-CSRF-Token": daemon.state.auth.csrf_token}
        assert browser.post("/workspace/memory/dream", headers=good).status_code == 202


def test_a_client_in_back_off_waits_for_its_answer(tmp_path: Path) -> None:
    with project_daemon(tmp_path) as daemon:
        backoff = daemon.state.auth.backoff
        backoff.tarpit = 0.3
        with daemon.client(token="wrong-token") as guessing:
            for _ in range(backoff.free):
                guessing.get("/capabilities")
            started = time.monotonic()
            assert guessing.get("/capabilities").status_code == 429
            assert time.monotonic() - started >= 0.3


# ---- every state-changing route without its credentials ----------------------------------------


def _unsafe_routes(daemon: LiveDaemon) -> list[tuple[str, str]]:
    document = daemon.app.openapi()
    found = []
    for path, operations in document["paths"].items():
        for method in operations:
            if method.upper() in UNSAFE:
                found.append(
                    (method.upper(), path.replace("{project_id}", "p").replace("{note_id}", "n"))
                )
    for route in page_router().routes:  # the page's routes are not in the document
        for method in getattr(route, "methods", None) or ():
            if method in UNSAFE:
                found.append((method, getattr(route, "path", "")))
    return found


def test_every_unsafe_route_is_refused_without_credentials_or_csrf(daemon: LiveDaemon) -> None:
    second = daemon.options.start.parent / "second"
    second.mkdir()
    with daemon.client() as http:
        added = http.post("/workspaces", json={"path": str(second), "create": True}).json()
    routes = _unsafe_routes(daemon)
    routes.append(("DELETE", f"/workspaces/{added['projectId']}"))
    assert {"/workspaces", "/memory/notes/save", "/sync/on"} <= {p for _, p in routes}
    with _signed_in(daemon) as browser, httpx2.Client(base_url=daemon.url) as anonymous:
        for method in UNSAFE:  # also methods a route does not take: auth comes first
            for _, path in routes:
                assert anonymous.request(method, path, json={}).status_code == 401, (method, path)
                cookie_only = browser.request(method, path, json={})
                assert cookie_only.status_code == 401, (method, path)
                assert cookie_only.json()["code"] == "token_required"
    with daemon.client() as http:
        hosted = {w["projectId"] for w in http.get("/workspaces").json()["workspaces"]}
    assert added["projectId"] in hosted  # the cookie-only DELETE removed nothing
    assert not list((daemon.options.start / "MEMORY").glob("*.md"))
