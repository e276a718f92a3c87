"""Fixtures for the harness integration tests: a scripted model server on loopback and
``oharness chat`` through the installed entry point."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from harness_cli_support import Chat  # noqa: E402
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
def chat(home: Path, project_dir: Path, stub: StubModelServer) -> Chat:
    session = Chat(home, project_dir, stub)
    session.ok("project", "init")  # a plain folder is a project only once registered
    return session
