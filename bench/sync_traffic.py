"""Sync traffic (spec 13.3): requests and bytes of the everyday sync cases, against a naive
client that downloads everything on every sync.

Two machines share one project through the sync server (the real app over an in-memory
object store, in this process); both run the real sync engine. Every request goes through a
counting transport: bytes are request bodies plus response bodies (no HTTP framing). The
cases: a first upload of every note, the first sync of a second machine, a sync where nothing
changed, one note changed among all of them (the pass that uploads it, and the other
machine's pass that downloads it), and a storage reset: the first machine to notice puts every
note back, the other finds them all already there (one full listing, no body transferred).

The baseline is the simplest client that works: every sync fetches the full listing with
every body (following ``pending`` when a response is full) and uploads what differs. It runs
the same cases against its own scope on the same server.

    python bench/sync_traffic.py             # 5,000 notes
    python bench/sync_traffic.py --quick     # 500 notes, a few seconds, for CI
    python bench/sync_traffic.py --notes 2000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
from starlette.testclient import TestClient

from oharness.memory.workspace import Workspace, open_workspace
from oharness.notes.format import Note, serialise_note_bytes
from oharness.server.app import create_app
from oharness.server.config import JwtSettings, ServerSettings
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.ancestor import AncestorStore
from oharness.sync.client import SyncClient
from oharness.sync.protocol import Change, CommitRequest, SnapshotRequest, SyncScope
from oharness.sync.scope_sync import ScopeSync

SECRET = "bench-secret-0123456789abcdef0123456789abcdef"
ORIGIN = "http://sync.bench"
PROJECT_ID = "p-0123456789abcdef0123456789abcdef"
START_MS = 1_789_000_000_000


@dataclass
class Traffic:
    """Requests and body bytes of one measured sync."""

    requests: int = 0
    sent: int = 0
    received: int = 0
    #: Note bodies received in snapshot answers, and full listings among them.
    bodies: int = 0
    listings: int = 0

    @property
    def bytes(self) -> int:
        return self.sent + self.received


class CountingTransport(httpx2.BaseTransport):
    """Forwards to the in-process server and counts what crosses the wire."""

    def __init__(self, server: httpx2.Client) -> None:
        self.server = server
        self.traffic = Traffic()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        sent = len(request.read())
        response = self.server.send(request)
        self.traffic.requests += 1
        self.traffic.sent += sent
        self.traffic.received += len(response.content)
        if request.url.path.endswith("/snapshot") and response.status_code == 200:
            answer = response.json()
            self.traffic.bodies += len(answer.get("objects") or {})
            self.traffic.listings += 1 if answer.get("full") else 0
        return response

    @contextmanager
    def measure(self) -> Iterator[Traffic]:
        self.traffic = measured = Traffic()
        yield measured


class Clock:
    def __init__(self) -> None:
        self.now = START_MS

    def __call__(self) -> int:
        self.now += 1
        return self.now


def token(user: str) -> str:
    payload = {"sub": user, "exp": int(time.time()) + 3600, "ent": {"plan": "paid"}}
    return jwt.encode(payload, SECRET, algorithm="HS256")


def note_bytes(index: int, generation: int = 0) -> bytes:
    """A note of typical size (~500 bytes): a summary, tags and a few lines of body."""
    body = (
        f"Remembered detail {index}, revision {generation}.\n\n"
        + "The deploy runs after the tests pass and the changelog is updated. " * 5
        + "\n"
    )
    note = Note(
        id=f"note-{index:05d}",
        summary=f"Remembered fact number {index}",
        body=body,
        tags=("bench", f"group-{index % 20}"),
        created_at=START_MS,
        updated_at=START_MS + generation,
    )
    return serialise_note_bytes(note)


class Machine:
    """One machine: a project folder and OHARNESS_HOME, synced by the real engine."""

    def __init__(self, root: Path, server: TestClient, clock: Clock) -> None:
        self.root = root / "repo"
        self.home = root / "home"
        (self.root / ".oharness").mkdir(parents=True)
        (self.root / ".oharness" / "project.json").write_text(
            json.dumps({"id": PROJECT_ID, "createdAt": 1}), encoding="utf-8"
        )
        self.home.mkdir(parents=True)
        self.transport = CountingTransport(server)
        client = SyncClient(ORIGIN, token("bench"), http=httpx2.Client(transport=self.transport))
        self.workspace: Workspace = open_workspace(self.root, self.home, register=True, clock=clock)
        service = self.workspace.service
        key = service.scope_key("project")
        self.store = service.store("project")
        self.engine = ScopeSync(
            store=self.store,
            base=AncestorStore(self.home / "memory-sync", key),
            client=client,
            scope=SyncScope("project", PROJECT_ID),
            scope_key=key,
            backups=service.backups(),
            clock=clock,
        )

    def write_notes(self, count: int) -> None:
        """Put ``count`` note files in the notes folder (as an import or a restore would)."""
        folder = self.store.directory
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(count):
            (folder / f"note-{index:05d}.md").write_bytes(note_bytes(index))

    def sync(self) -> Traffic:
        with self.transport.measure() as traffic:
            result = self.engine.run()
        if result.errors or result.rejected or result.conflicts:
            raise RuntimeError(f"the sync pass did not go through: {result.to_json()}")
        return traffic


class NaiveClient:
    """Downloads the full listing with every body on every sync; uploads what differs."""

    def __init__(self, server: TestClient) -> None:
        self.transport = CountingTransport(server)
        http = httpx2.Client(transport=self.transport)
        self.client = SyncClient(ORIGIN, token("naive"), http=http)
        self.scope = SyncScope("project", PROJECT_ID)
        self.local: dict[str, bytes] = {}

    def sync(self) -> Traffic:
        with self.transport.measure() as traffic:
            listing = self.client.snapshot(SnapshotRequest(self.scope, protocol=2))
            bodies = dict(listing.objects)
            pending = list(listing.pending)
            while pending:
                more = self.client.snapshot(
                    SnapshotRequest(self.scope, protocol=2, since=0, want=tuple(pending))
                )
                bodies.update(more.objects)
                pending = [rev for rev in pending if rev not in bodies]
            remote = {note.id: note for note in listing.notes}
            changes = []
            for note_id, data in sorted(self.local.items()):
                text, entry = data.decode("utf-8"), remote.get(note_id)
                if entry is None or bodies.get(entry.rev) != text:
                    changes.append(Change("put", note_id, entry.rev if entry else None, text))
            limit = listing.quotas.max_changes_per_commit
            for start in range(0, len(changes), limit):
                chunk = tuple(changes[start : start + limit])
                self.client.commit(CommitRequest(self.scope, chunk, 2))
        return traffic


def run(notes: int) -> list[dict[str, Any]]:
    """Every case for ours and the naive client; one row per case."""
    store = MemoryObjectStore()
    settings = ServerSettings(jwt=JwtSettings(secret=SECRET), rate_per_minute=0)
    clock = Clock()
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="oharness-bench-", dir=_scratch()) as tmp,
        TestClient(create_app(store, settings, sleep=lambda _: None), base_url=ORIGIN) as server,
    ):
        first, second = (
            Machine(Path(tmp) / "a", server, clock),
            Machine(Path(tmp) / "b", server, clock),
        )
        naive = NaiveClient(server)
        first.write_notes(notes)
        naive.local = {f"note-{index:05d}": note_bytes(index) for index in range(notes)}

        def case(name: str, ours: Callable[[], Traffic], baseline: Callable[[], Traffic]) -> None:
            started = time.perf_counter()
            measured = ours()
            seconds = time.perf_counter() - started
            rows.append(
                {
                    "case": name,
                    "ours": asdict(measured),
                    "naive": asdict(baseline()),
                    "seconds": round(seconds, 2),
                }
            )

        case(f"first upload of {notes:,} notes", first.sync, naive.sync)
        case(f"second machine, first sync ({notes:,} notes)", second.sync, naive.sync)
        case("nothing changed", first.sync, naive.sync)
        changed = notes // 2
        path = first.store.directory / f"note-{changed:05d}.md"
        path.write_bytes(note_bytes(changed, generation=1))
        naive.local[f"note-{changed:05d}"] = note_bytes(changed, generation=1)
        case(f"one note changed among {notes:,}: upload", first.sync, naive.sync)
        case(f"one note changed among {notes:,}: download", second.sync, naive.sync)
        store._objects.clear()  # the operator resets the storage
        naive_reset = NaiveClient(server)
        case(f"after a reset: the first machine puts {notes:,} back", second.sync, naive.sync)
        case(
            f"after a reset: the other machine ({notes:,} both sides)", first.sync, naive_reset.sync
        )
    return rows


def _scratch() -> str | None:
    """Local folder speed is not what is measured: use a RAM disk when there is one."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _size(count: int) -> str:
    if count < 10_000:
        return f"{count:,} B"
    if count < 10_000_000:
        return f"{count / 1024:,.1f} KiB"
    return f"{count / 1024 / 1024:,.1f} MiB"


def print_table(rows: list[dict[str, Any]]) -> None:
    width = max(len(row["case"]) for row in rows)
    header = (
        f"{'case':<{width}}  {'requests':>8} {'bytes':>11}   {'naive req':>9} {'naive bytes':>11}"
    )
    print(header + f"  {'naive/ours':>11}  {'our pass':>9}  {'listings':>8} {'bodies in':>9}")
    print("-" * (len(header) + 44))
    for row in rows:
        ours, naive = row["ours"], row["naive"]
        ours_bytes = ours["sent"] + ours["received"]
        naive_bytes = naive["sent"] + naive["received"]
        ratio = naive_bytes / ours_bytes if ours_bytes else 0.0
        saved = f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.1f}x"
        print(
            f"{row['case']:<{width}}  {ours['requests']:>8} {_size(ours_bytes):>11}   "
            f"{naive['requests']:>9} {_size(naive_bytes):>11}  {saved:>11}  "
            f"{row['seconds']:>7.2f} s  {ours['listings']:>8} {ours['bodies']:>9}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="500 notes (CI smoke run)")
    parser.add_argument("--notes", type=int, default=None, help="notes in the scope")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    notes = args.notes or (500 if args.quick else 5_000)
    rows = run(notes)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(
            f"{notes:,} notes of ~{len(note_bytes(0))} bytes; bytes = request + response bodies\n"
        )
        print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
