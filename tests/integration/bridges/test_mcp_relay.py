"""``oharness mcp`` while a daemon runs: the session is relayed to the daemon's MCP socket and
served there (it answers at once, the notes already loaded), and goes on in-process when the
daemon goes away; driven by the MCP SDK's own stdio client against a real ``oharness serve``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from repos import git
from tests.integration.bridges.mcp_client import Body, forget_approved, session, tool_data
from tests.integration.bridges.runner import OHARNESS, ok


@pytest.fixture
def place() -> Iterator[Path]:
    # Short: a Unix socket's path holds about a hundred bytes.
    folder = Path(tempfile.mkdtemp(prefix="omr"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def home(place: Path) -> Path:
    (place / "home").mkdir()
    return place / "home"


@pytest.fixture
def project(home: Path, place: Path) -> Path:
    root = place / "project"
    root.mkdir()
    git(root, "init", "-q")
    ok(home, root, "project", "init")
    return root


@pytest.fixture
def daemon(home: Path, place: Path) -> Iterator[subprocess.Popen[str]]:
    """``oharness serve`` started in a folder that is no project, not signed in: it hosts a
    project only when a session through it asks (no background sync reads the marks)."""
    elsewhere = place / "elsewhere"
    elsewhere.mkdir()
    process = subprocess.Popen(
        [str(OHARNESS), "serve", "--port", str(_free_port())],
        cwd=elsewhere,
        env={**os.environ, "OHARNESS_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (home / "daemon.json").exists():
        assert process.poll() is None and time.monotonic() < deadline, "the daemon did not start"
        time.sleep(0.05)
    yield process
    process.terminate()
    process.wait(timeout=30)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _hosted_roots(home: Path) -> list[str]:
    url = json.loads((home / "daemon.json").read_text())["url"]
    token = (home / "daemon-token").read_text().strip()
    answer = httpx2.get(f"{url}/workspaces", headers={"Authorization": f"Bearer {token}"})
    answer.raise_for_status()
    return [Path(w["root"]).resolve().as_posix() for w in answer.json()["workspaces"]]


def test_a_session_is_served_by_the_daemon(
    home: Path, project: Path, daemon: subprocess.Popen[str]
) -> None:
    async def body(session: ClientSession) -> dict[str, Any]:
        tools = await session.list_tools()
        saved = await session.call_tool(
            "remember", {"summary": "Deploys happen on Tuesdays", "body": "Release train at noon."}
        )
        found = await session.call_tool("memory", {"query": "when do deploys happen"})
        index = await session.read_resource("oharness://memory/index")
        return {"tools": tools, "saved": saved, "found": found, "index": index}

    out = session(home, project)(body)
    assert {tool.name for tool in out["tools"].tools} == {"remember", "memory", "forget"}
    saved = tool_data(out["saved"])
    assert Path(saved["path"]).parent == project / "MEMORY"
    assert tool_data(out["found"])["results"][0]["id"] == saved["id"]
    assert saved["id"] in out["index"].contents[0].text
    # The daemon hosts the project because the session asked it to (it follows no marks).
    assert project.resolve().as_posix() in _hosted_roots(home)


def test_forget_asks_the_person_through_the_daemon(
    home: Path, project: Path, daemon: subprocess.Popen[str]
) -> None:
    note_id = json.loads(
        ok(
            home, project, "memory", "remember", "-s", "Old fact", "-b", "Obsolete.", "--json"
        ).stdout
    )["id"]
    result, asked = forget_approved(home, project, note_id)
    assert result.is_error is False, result.content
    assert asked and note_id in asked[0]
    assert not (project / "MEMORY" / f"{note_id}.md").exists()
    assert project.resolve().as_posix() in _hosted_roots(home)


def test_the_session_goes_on_when_the_daemon_goes(
    home: Path, project: Path, daemon: subprocess.Popen[str]
) -> None:
    async def body(session: ClientSession) -> dict[str, Any]:
        first = await session.call_tool("remember", {"summary": "Before", "body": "Daemon up."})
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(timeout=30)
        second = await session.call_tool("remember", {"summary": "After", "body": "Daemon gone."})
        found = await session.call_tool("memory", {"query": "daemon"})
        tools = await session.list_tools()
        return {"first": first, "second": second, "found": found, "tools": tools}

    out = session(home, project)(body)
    assert out["first"].is_error is False and out["second"].is_error is False
    ids = {hit["id"] for hit in tool_data(out["found"])["results"]}
    assert {tool_data(out["first"])["id"], tool_data(out["second"])["id"]} <= ids
    assert len(out["tools"].tools) == 3
    assert len(list((project / "MEMORY").glob("*.md"))) == 2


def test_in_process_when_asked_or_no_project(
    home: Path, project: Path, place: Path, daemon: subprocess.Popen[str]
) -> None:
    async def remember(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("remember", {"summary": "Asked here", "body": "x"})

    result = session(home, project, "--in-process")(remember)
    assert result.is_error is False
    assert project.resolve().as_posix() not in _hosted_roots(home)

    plain = place / "plain"  # no git, no marker: the user notes alone, as in-process

    async def remember_mine(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool(
            "remember", {"summary": "Mine alone", "body": "x", "scope": "user"}
        )

    plain.mkdir()
    kept = session(home, plain)(remember_mine)
    assert kept.is_error is False and tool_data(kept)["scope"] == "user"
    assert plain.resolve().as_posix() not in _hosted_roots(home)


def test_a_daemon_that_does_not_answer_costs_one_wait(home: Path, project: Path) -> None:
    """A socket that accepts and never answers: the session is served in-process after the
    hello's one-second wait, and the next one does not try again (the daemon is skipped a
    while, as by the prompt hook)."""
    (home / "daemon.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": 1}))
    (home / "daemon-token").write_text("t" * 43)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(home / "mcp.sock"))
    listener.listen(8)
    held: list[socket.socket] = []

    def accept_and_say_nothing() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept_and_say_nothing, daemon=True).start()

    async def remember(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("remember", {"summary": "Hung daemon", "body": "x"})

    assert session(home, project)(remember).is_error is False
    assert session(home, project)(remember).is_error is False
    assert len(held) == 1
    assert (home / "hooks" / "daemon-unresponsive").exists()
    assert len(list((project / "MEMORY").glob("*.md"))) == 1  # the same note: remembered once
    listener.close()


def test_a_second_clone_is_served_by_the_daemon_with_its_own_folder(
    home: Path, place: Path, daemon: subprocess.Popen[str]
) -> None:
    """The daemon hosts one folder of a project; a session in a second clone of it is served
    there all the same, over that clone's own notes (as in-process), not the first clone's."""
    origin = place / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    git(origin, "commit", "-q", "--allow-empty", "-m", "start")
    first, second = place / "first", place / "second"
    for clone in (first, second):
        git(place, "clone", "-q", str(origin), str(clone))
        ok(home, clone, "project", "init")

    def remember(summary: str) -> Body:
        async def body(session: ClientSession) -> types.CallToolResult:
            return await session.call_tool("remember", {"summary": summary, "body": "x"})

        return body

    in_first = session(home, first)(remember("Written in the first clone"))
    in_second = session(home, second)(remember("Written in the second clone"))
    assert in_first.is_error is False and in_second.is_error is False, in_second.content
    assert Path(tool_data(in_first)["path"]).parent == first / "MEMORY"
    assert Path(tool_data(in_second)["path"]).parent == second / "MEMORY"
    hosted = _hosted_roots(home)
    assert first.resolve().as_posix() in hosted and second.resolve().as_posix() not in hosted
