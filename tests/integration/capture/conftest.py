"""Fixtures for capture: the loopback model stub of the harness tests, a registered project."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HARNESS = Path(__file__).resolve().parent.parent / "harness"
if str(_HARNESS) not in sys.path:
    sys.path.insert(0, str(_HARNESS))

from capture_support import Agent  # noqa: E402
from stub_model_server import StubModelServer  # noqa: E402


@pytest.fixture
def stub() -> Iterator[StubModelServer]:
    server = StubModelServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def agent(home: Path, project_dir: Path, stub: StubModelServer) -> Agent:
    runner = Agent(home, project_dir, stub)
    runner.run("project", "init")
    return runner
