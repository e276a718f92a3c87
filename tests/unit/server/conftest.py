"""Fixtures for the sync-server unit tests: an in-memory store and an in-process client."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

_SUPPORT = str(Path(__file__).resolve().parents[2] / "integration" / "server")
if _SUPPORT not in sys.path:
    sys.path.insert(0, _SUPPORT)

from sync_server_support import (  # noqa: E402
    Api,
    FakeClock,
    FakeMonotonic,
    MakeApi,
    make_settings,
    token_for,
)

from oharness.server.app import create_app  # noqa: E402
from oharness.storage.in_memory import MemoryObjectStore  # noqa: E402
from oharness.storage.object_store import ObjectStore  # noqa: E402


@pytest.fixture
def store() -> MemoryObjectStore:
    return MemoryObjectStore()


@pytest.fixture
def server_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def monotonic() -> FakeMonotonic:
    return FakeMonotonic()


@pytest.fixture
def make_api(
    store: MemoryObjectStore, server_clock: FakeClock, monotonic: FakeMonotonic
) -> Iterator[MakeApi]:
    """``make_api(store=..., user=..., **settings)`` -> an :class:`Api` as ``user``."""
    clients: list[TestClient] = []

    def factory(
        *, on_store: ObjectStore | None = None, user: str = "alice", **overrides: Any
    ) -> Api:
        app = create_app(
            on_store if on_store is not None else store,
            make_settings(**overrides),
            clock=server_clock,
            monotonic=monotonic,
            sleep=lambda seconds: None,
        )
        client = TestClient(app)
        clients.append(client)
        return Api(client, token_for(user))

    yield factory
    for client in clients:
        client.close()


@pytest.fixture
def api(make_api: MakeApi) -> Api:
    return make_api()
