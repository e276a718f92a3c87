"""Wire models: msgspec structs (what the protocol uses) against pydantic v2 models of the same
messages, in one run.

- client start-up: a new process imports the client's HTTP library and the wire models and
  parses one snapshot answer (what a hook spawning the CLI pays): median CPU and wall time over
  several processes (the two libraries alternating), and the library's own import time from
  ``python -X importtime``;
- server wire work per request: parse a commit request and encode a commit answer, parse a
  snapshot request and encode a full listing of N notes.

::

    python bench/wire_models.py            # 5,000-note listing, 15 processes each
    python bench/wire_models.py --quick    # 300 notes, 3 processes each, for CI
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REV = "0123456789abcdef0123456789abcdef"

PYDANTIC_MODELS = """
from typing import Literal
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True,
                              strict=True)

class Quotas(Model):
    max_notes: int = Field(5000, ge=0)
    max_changes_per_commit: int = Field(500, ge=0)
    max_body_bytes: int = Field(131072, ge=0)
    max_response_bytes: int = Field(16777216, ge=0)
    tombstone_days: int = Field(90, ge=0)
    max_request_bytes: int | None = None

class Scope(Model):
    kind: Literal["project", "user"]
    project_id: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")

class NoteEntry(Model):
    id: str
    rev: str
    hash: str
    size: int = Field(ge=0)
    typed: bool = False
    changed_at: int = Field(0, ge=0)

class TombstoneEntry(Model):
    id: str
    rev: str
    deleted_at: int = Field(ge=0)

class SnapshotRequest(Model):
    scope: Scope
    protocol: int = Field(2, ge=1)
    since: int | None = Field(None, ge=0)
    have: frozenset[str] = frozenset()
    want: tuple[str, ...] = ()
    generation: str | None = None
    since_commit: str | None = None

class SnapshotResponse(Model):
    version: int = Field(ge=0)
    plan: Literal["free", "paid"]
    quotas: Quotas
    unchanged: bool = False
    full: bool = False
    notes: tuple[NoteEntry, ...] = ()
    tombstones: tuple[TombstoneEntry, ...] = ()
    objects: dict[str, str] = {}
    pending: tuple[str, ...] = ()
    reset: bool = False
    generation: str | None = None
    commit: str | None = None

class Change(Model):
    op: str
    id: str
    base_rev: str | None = None
    content: str | None = None

class CommitRequest(Model):
    scope: Scope
    changes: tuple[Change, ...]
    protocol: int = Field(2, ge=1)
    base_version: int | None = Field(None, ge=0)
    atomic: bool = False

class AppliedEntry(Model):
    id: str
    op: Literal["put", "delete"]
    rev: str

class CommitResponse(Model):
    version: int = Field(ge=0)
    plan: Literal["free", "paid"]
    quotas: Quotas
    applied: tuple[AppliedEntry, ...] = ()
    rejected: tuple[dict, ...] = ()
    changed: bool | None = None
    generation: str | None = None
    commit: str | None = None
"""

STARTUP = {
    "msgspec": (
        "import sys\n"
        "import httpx2, oharness.errors\n"
        "from oharness.sync.protocol import SnapshotResponse, decode\n"
        "decode(open(sys.argv[1], 'rb').read(), SnapshotResponse, 'snapshot')\n"
    ),
    "pydantic": (
        "import sys\n"
        "import httpx2, oharness.errors\n" + PYDANTIC_MODELS + "\n"
        "SnapshotResponse.model_validate_json(open(sys.argv[1], 'rb').read())\n"
    ),
}


def listing(notes: int) -> dict[str, Any]:
    """A full snapshot answer of ``notes`` notes, with a few bodies."""
    return {
        "version": notes,
        "full": True,
        "notes": [
            {
                "id": f"note-{i:05d}",
                "rev": REV,
                "hash": f"sha256:{i:064x}",
                "size": 400,
                "typed": i % 3 == 0,
                "changedAt": 1789000000000 + i,
            }
            for i in range(notes)
        ],
        "tombstones": [{"id": "gone-1", "rev": REV, "deletedAt": 1789000000000}],
        "objects": {REV: "---\n{}\n---\nbody\n" * 3},
        "pending": [],
        "quotas": {
            "maxNotes": 5000,
            "maxChangesPerCommit": 500,
            "maxBodyBytes": 131072,
            "maxResponseBytes": 16777216,
            "tombstoneDays": 90,
        },
        "plan": "free",
    }


def startup(snapshot: Path, runs: int) -> dict[str, dict[str, float]]:
    """Per library: median process CPU time (user + system, which the machine's load does not
    inflate the way it does wall time), wall time, and the library's import time (ms). The
    libraries' processes alternate, so both see the same load."""
    rows: dict[str, dict[str, list[float]]] = {
        kind: {"cpu": [], "wall": [], "library": []} for kind in STARTUP
    }
    for _ in range(runs):
        for kind, code in STARTUP.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            begin = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", code, str(snapshot)],
                capture_output=True,
                text=True,
                check=True,
            )
            rows[kind]["wall"].append((time.perf_counter() - begin) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            rows[kind]["cpu"].append(cpu * 1000)
            rows[kind]["library"].append(_cumulative_ms(done.stderr, kind))
    return {
        kind: {
            "process_cpu_ms": statistics.median(row["cpu"]),
            "process_wall_ms": statistics.median(row["wall"]),
            "library_import_ms": statistics.median(row["library"]),
        }
        for kind, row in rows.items()
    }


def _cumulative_ms(importtime: str, module: str) -> float:
    for line in importtime.splitlines():
        parts = [part.strip() for part in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1000
    return 0.0


def server_work(notes: int, repeat: int) -> dict[str, dict[str, float]]:
    """Per-request parse + encode time (ms) of both libraries, same messages."""
    import msgspec

    from oharness.sync.protocol import (
        CommitResponse,
        SnapshotResponse,
        parse_commit_request,
        parse_snapshot_request,
    )

    models: dict[str, Any] = {}
    # The same messages as pydantic models (compiled without this module's __future__ import).
    exec(compile(PYDANTIC_MODELS, "pydantic_models", "exec", dont_inherit=True), models)
    body = listing(notes)
    answer_m = msgspec.convert(body, SnapshotResponse)
    answer_p = models["SnapshotResponse"].model_validate(body, strict=False)
    snap_body = {"protocol": 2, "scope": {"kind": "project", "projectId": "p-1"}, "since": 3}
    change = {"op": "put", "id": "a-1", "baseRev": None, "content": "---\n{}\n---\nx\n"}
    commit_body = {"protocol": 2, "scope": {"kind": "user"}, "changes": [change] * 20}
    snap, commit = json.dumps(snap_body).encode(), json.dumps(commit_body).encode()
    done = {"version": 4, "plan": "free", "quotas": body["quotas"], "applied": [], "rejected": []}
    commit_m = msgspec.convert(done, CommitResponse)
    commit_p = models["CommitResponse"].model_validate(done, strict=False)
    snap_p, commit_req_p = models["SnapshotRequest"], models["CommitRequest"]

    def dump_p(model: Any) -> bytes:
        return bytes(model.model_dump_json(by_alias=True, exclude_none=True), "utf-8")

    cases = {
        "msgspec": {
            # what the server does: the size-capped JSON read, then the declaration
            "commit": lambda: (parse_commit_request(json.loads(commit)), commit_m.encode()),
            "snapshot": lambda: (parse_snapshot_request(json.loads(snap)), answer_m.encode()),
        },
        "pydantic": {
            "commit": lambda: (commit_req_p.model_validate_json(commit), dump_p(commit_p)),
            "snapshot": lambda: (snap_p.model_validate_json(snap), dump_p(answer_p)),
        },
    }
    results: dict[str, dict[str, float]] = {}
    for library, work in cases.items():
        results[library] = {}
        for name, func in work.items():
            times = []
            for _ in range(repeat):
                begin = time.perf_counter()
                func()
                times.append((time.perf_counter() - begin) * 1000)
            results[library][f"{name}_ms"] = statistics.median(times)
    json.dumps(results)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="300 notes, 3 processes (CI)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    notes, runs = (300, 3) if args.quick else (5000, 15)
    with tempfile.TemporaryDirectory() as folder:
        snapshot = Path(folder) / "snapshot.json"
        snapshot.write_text(json.dumps(listing(notes)), encoding="utf-8")
        report: dict[str, Any] = {
            "notes": notes,
            "startup": startup(snapshot, runs),
            "server": server_work(notes, 5 if args.quick else 50),
        }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"client start-up, a new process parsing a {notes}-note snapshot (median of {runs}):")
    for kind, row in report["startup"].items():
        print(
            f"  {kind:9} process CPU {row['process_cpu_ms']:6.1f} ms  wall "
            f"{row['process_wall_ms']:7.1f} ms  {kind} import {row['library_import_ms']:5.1f} ms"
        )
    print("server wire work per request (parse the request, encode the answer):")
    for kind, row in report["server"].items():
        print(
            f"  {kind:9} commit of 20 {row['commit_ms']:6.3f} ms  "
            f"snapshot with {notes}-note listing {row['snapshot_ms']:7.3f} ms"
        )


if __name__ == "__main__":
    main()
