"""50 clients committing to one scope at once, over real HTTP, on the file and S3 backends (08).

Two server replicas share one storage, so the manifest compare-and-swap is what keeps them
consistent. Every client creates a note of its own and increments one shared counter note
with per-note compare-and-swap, retrying on conflicts and on 503. At the end: no lost update
(the counter is 50), no duplicated version (every accepted commit got a distinct version, and
the versions run 1..N with no gap), every accepted change is present.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from sync_server_support import (
    CLIENTS,
    COUNTER,
    Api,
    Client,
    counter_value,
    live_server,
    make_settings,
    note_text,
    token_for,
)
from sync_support import run_together

from oharness.storage.file import FileObjectStore
from oharness.storage.object_store import ObjectStore
from s3server import S3Server


def run_clients(make_store: Callable[[], ObjectStore]) -> None:
    settings = make_settings(rate_per_minute=0)
    with (
        live_server(make_store(), settings) as first,
        live_server(make_store(), settings) as second,
    ):
        clients = [Client(first.url if i % 2 else second.url, i) for i in range(CLIENTS)]
        try:
            run_together([client.run for client in clients], start_within=30, finish_within=600)
        finally:
            for client in clients:
                client.http.close()

        versions = sorted(v for client in clients for v in client.versions)
        assert versions == list(range(1, 2 * CLIENTS + 1)), "a version was duplicated or skipped"
        with first.client() as http:
            final = Api(http, token_for("alice")).ok_snapshot()
    assert final["version"] == 2 * CLIENTS
    notes = {note["id"]: note for note in final["notes"]}
    assert set(notes) == {COUNTER} | {f"client-{i}" for i in range(CLIENTS)}
    counter_text = final["objects"][notes[COUNTER]["rev"]]
    assert counter_value(counter_text) == CLIENTS, "an increment was lost"
    for i in range(CLIENTS):
        expected = note_text(f"client-{i}", f"from client {i}\n")
        assert final["objects"][notes[f"client-{i}"]["rev"]] == expected


@pytest.mark.slow
def test_fifty_clients_on_the_file_backend(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    run_clients(lambda: FileObjectStore(root))


@pytest.mark.slow
@pytest.mark.service
def test_fifty_clients_on_s3(s3_server: S3Server) -> None:
    prefix = f"concurrency-{uuid.uuid4().hex}"
    run_clients(lambda: s3_server.store(prefix))
