"""Fixtures for extraction over the real wire: a raw model server, the chat CLI helpers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for folder in (_HERE, _HERE.parent / "harness"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from harness_cli_support import Chat  # noqa: E402
from raw_model_server import RawModelServer  # noqa: E402
from stub_model_server import StubModelServer  # noqa: E402


@pytest.fixture
def raw_server() -> Iterator[RawModelServer]:
    server = RawModelServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


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
    return Chat(home, project_dir, stub)
