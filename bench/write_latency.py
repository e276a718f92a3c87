"""The cost of a write: ``remember`` in a long-lived process at 5, 1,000 and 10,000 notes.

A project folder holds N synthetic notes (``recall_corpus.py``, seeded). A fresh Python process
opens the workspace once, writes one note to warm up, then times ``remember`` of new notes and
updates of existing ones (the daemon's and a chat's path: the store and recall index stay warm
between writes). It also counts the directory listings (``os.scandir``) each write makes.

The same measurement runs, in the same invocation and on the same folders, against the code
of a baseline git ref (default ``main``; its ``src/`` extracted with ``git archive``), so the
figures sit beside the code they replace::

    python bench/write_latency.py                   # 5, 1,000 and 10,000 notes; 40 writes each
    python bench/write_latency.py --quick           # 5 and 1,000 notes; 10 writes each
    python bench/write_latency.py --baseline REF    # compare with another commit
    python bench/write_latency.py --code HEAD       # measure a commit, not the working tree

Without the baseline ref (a checkout without history) the current code is measured alone and
the report says so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from recall_corpus import synthetic_corpus

from oharness.notes.format import serialise_note_bytes

REPO = Path(__file__).resolve().parents[1]
PROJECT_ID = "git-000000000000000000000000000000000write"
_CHILD = """
import json, os, statistics, sys, time
from pathlib import Path
from oharness.memory.workspace import open_workspace

root, home, writes = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
scans = [0]
real_scandir = os.scandir
def counting_scandir(*args, **kwargs):
    scans[0] += 1
    return real_scandir(*args, **kwargs)
os.scandir = counting_scandir
ws = open_workspace(root, home, register=False)
service = ws.service
service.remember("Warm up write", "The first write loads everything.")
created, updated, scan_counts = [], [], []
existing = sorted(stored.id for stored in service.store("project").notes())[:writes]
for number in range(writes):
    scans[0] = 0
    start = time.perf_counter()
    service.remember(f"Benchmark write number {number}", f"Body of write {number} about vopa.")
    created.append(time.perf_counter() - start)
    scan_counts.append(scans[0])
    start = time.perf_counter()
    target = existing[number % len(existing)]
    service.remember(f"Updated note {number}", f"Updated body {number}.", id=target)
    updated.append(time.perf_counter() - start)
print(json.dumps({"created": created, "updated": updated, "scans": scan_counts}))
"""


def write_project(root: Path, count: int) -> None:
    """A registered project whose notes folder holds ``count`` seeded notes."""
    (root / ".oharness").mkdir(parents=True)
    (root / ".oharness" / "project.json").write_text(
        json.dumps({"id": PROJECT_ID, "createdAt": 1}), encoding="utf-8"
    )
    limit = {"memory": {"maxNotes": 2 * count + 1_000}}  # every note loaded, room to write
    (root / ".oharness" / "config.json").write_text(json.dumps(limit), encoding="utf-8")
    folder = root / "MEMORY"
    folder.mkdir()
    for _, note in synthetic_corpus(count, seed=3).notes:
        (folder / f"{note.id}.md").write_bytes(serialise_note_bytes(note))


def extract_source(ref: str, into: Path) -> Path | None:
    """``src/`` of ``ref`` under ``into``, or None when the ref is not in this checkout."""
    into.mkdir(parents=True)
    archive = into / "source.tar"
    done = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(archive), ref, "src"],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def measure(src: Path, root: Path, home: Path, writes: int) -> dict[str, list[float]]:
    """Run the child against the code in ``src`` on a copy of the folder."""
    with tempfile.TemporaryDirectory(dir=root.parent) as scratch:
        copy, copy_home = Path(scratch) / "project", Path(scratch) / "home"
        shutil.copytree(root, copy)
        copy_home.mkdir()
        env = {**os.environ, "PYTHONPATH": str(src)}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(copy), str(copy_home), str(writes)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"the measurement failed with the code in {src}:\n{done.stderr}")
    result: dict[str, list[float]] = json.loads(done.stdout)
    return result


def _ms(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


def _line(label: str, data: dict[str, list[float]]) -> str:
    created, updated = data["created"], data["updated"]
    return (
        f"  {label:<9} remember new p50 {_ms(created, 0.5):7.2f} ms  p95 {_ms(created, 0.95):7.2f}"
        f" ms | update p50 {_ms(updated, 0.5):7.2f} ms  p95 {_ms(updated, 0.95):7.2f} ms"
        f" | listings per write {statistics.median(data['scans']):.0f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="5 and 1,000 notes, 10 writes")
    parser.add_argument("--baseline", default="main", help="git ref to compare with")
    parser.add_argument("--code", default=None, help="git ref to measure (default: src/)")
    args = parser.parse_args(argv)
    sizes = (5, 1_000) if args.quick else (5, 1_000, 10_000)
    writes = 10 if args.quick else 40
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"remember in a warm process, {writes} writes each (load {load:.1f})")
    with tempfile.TemporaryDirectory() as tmp:
        baseline = extract_source(args.baseline, Path(tmp) / "baseline")
        if baseline is None:
            print(f"  baseline {args.baseline!r} is not in this checkout: current code only")
        code = REPO / "src"
        if args.code is not None:
            extracted = extract_source(args.code, Path(tmp) / "code")
            if extracted is None:
                raise SystemExit(f"--code {args.code!r} is not in this checkout")
            code = extracted
        for size in sizes:
            root = Path(tmp) / f"n{size}" / "project"
            write_project(root, size)
            print(f"{size} notes:")
            print(_line("this code", measure(code, root, root.parent / "home", writes)))
            if baseline is not None:
                data = measure(baseline, root, root.parent / "home", writes)
                print(_line(args.baseline, data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
