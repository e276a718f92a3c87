"""50 clients committing to one scope at once, over real HTTP, on the file and S3 backends (08).

Two server replicas share one storage, so the manifest compare-and-swap is what keeps them
consistent. Every client creates a note of its own and increments one shared counter note
with per-note compare-and-swap, retrying on conflicts and on 503. At the end: no lost update
(the counter is 50), no duplicated version (every accepted commit got a distinct version, and
the versions run 1..N with no gap), every accepted change is present.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sync_server_support import (
    Api,
    LiveServer,
    live_server,
    make_settings,
    note_text,
    put,
    rev_of,
    token_for,
)

from oharness.notes.format import parse_note
from oharness.storage.file import FileObjectStore
from oharness.storage.object_store import ObjectStore
from s3server import S3Server

CLIENTS = 50
COUNTER = "counter-1"


class Client:
    """One device: its own HTTP connection, retrying 503s and conflicts."""

    def __init__(self, server: LiveServer, index: int) -> None:
        self.http = httpx2.Client(base_url=server.url, timeout=120)
        self.api = Api(self.http, token_for("alice"))
        self.index = index
        self.versions: list[int] = []

    def commit(self, changes: list[dict[str, Any]]) -> dict[str, Any]:
        for _ in range(200):
            response = self.api.commit(changes)
            if response.status_code == 503:
                continue
            assert response.status_code == 200, response.text
            data: dict[str, Any] = response.json()
            return data
        raise AssertionError("the server stayed unavailable")

    def create_own_note(self) -> None:
        note_id = f"client-{self.index}"
        data = self.commit([put(note_id, note_text(note_id, f"from client {self.index}\n"))])
        assert data["applied"] and not data["rejected"], data
        self.versions.append(data["version"])

    def increment_counter(self) -> None:
        base_rev: str | None = None
        text: str | None = None
        seen_version = 0
        for _ in range(10 * CLIENTS):
            if base_rev is not None and text is None:
                base_rev, text = self.fetch_counter(base_rev, seen_version)
            value = 0 if text is None else counter_value(text)
            # Who wrote it is part of the content: two clients writing the same bytes would be
            # one revision, and the protocol rightly treats the second as a retry of the first.
            new_text = note_text(COUNTER, f"{value + 1}\nby client {self.index}\n")
            data = self.commit([put(COUNTER, new_text, base_rev)])
            if data["applied"]:
                assert data["applied"][0]["rev"] == rev_of(new_text)
                self.versions.append(data["version"])
                return
            rejected = data["rejected"][0]
            assert rejected["reason"] == "conflict", rejected
            base_rev, text, seen_version = rejected["currentRev"], None, data["version"]
        raise AssertionError("never got the counter")

    def fetch_counter(self, rev: str, version: int) -> tuple[str, str]:
        """The counter's body: the wanted revision, or a newer one the delta lists."""
        data = self.api.ok_snapshot(since=version, want=[rev])
        if rev in data["objects"]:
            return rev, str(data["objects"][rev])
        listed = {note["id"]: note["rev"] for note in data["notes"]}
        newer = listed[COUNTER]  # superseded meanwhile: the delta carries the new one
        return newer, str(data["objects"][newer])

    def run(self) -> None:
        self.create_own_note()
        self.increment_counter()


def counter_value(text: str) -> int:
    return int(parse_note(text).body.split("\n", 1)[0])


def run_clients(make_store: Callable[[], ObjectStore]) -> None:
    settings = make_settings(rate_per_minute=0)
    with (
        live_server(make_store(), settings) as first,
        live_server(make_store(), settings) as second,
    ):
        clients = [Client(first if i % 2 else second, i) for i in range(CLIENTS)]
        errors: list[BaseException] = []
        barrier = threading.Barrier(CLIENTS)

        def work(client: Client) -> None:
            try:
                barrier.wait(timeout=30)
                client.run()
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(client,)) for client in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        for client in clients:
            client.http.close()
        assert not errors, errors[:3]

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
