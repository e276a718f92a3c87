"""Fixtures for the daemon tests: a live daemon on loopback over a temporary home and project,
and the harness tests' loopback model stub (the small model's real wire path)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
# The live sync server's helpers and the harness tests' model stub.
for _path in (str(_HERE), str(_HERE.parent / "server"), str(_HERE.parent / "harness")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from stub_model_server import StubModelServer  # noqa: E402


@pytest.fixture
def stub() -> Iterator[StubModelServer]:
    server = StubModelServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
