"""Review speed (spec 05.1): the review list over 5,000 notes of one scope, cold and warm.

5,000 synthetic project notes (``recall_corpus.py``, seeded), one in twenty with a reworded
twin (same words shuffled, one dropped) so same-topic groups exist, some with ``[[links]]``
(half dangling) and backticked paths (half missing). Timed:

- cold: a new Python process opens the workspace (reads every note file) and computes the
  review list (tokenising every summary);
- warm: the same review again in the same process (notes and terms cached), median of runs;
- baseline, in the same run: naive all-pairs similarity over the same term sets (what the
  inverted-index candidate search avoids), on 1,000 notes and scaled by n²::

    python bench/review_speed.py            # 5,000 notes
    python bench/review_speed.py --quick    # 1,000 notes

Targets: warm <= 200 ms, cold <= 1 s (exit status 1 when missed, full run only).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from recall_corpus import synthetic_corpus

from oharness.notes.format import Note, serialise_note_bytes
from oharness.recall.score import similarity

NOW = int(time.time() * 1000)
PROJECT_ID = "git-0000000000000000000000000000000000review"
_CHILD = """
import json, sys, time
start = time.perf_counter()
cpu_start = time.process_time()
from oharness.review import open_review
from oharness.memory.workspace import open_workspace, wall_clock_ms
imported = time.perf_counter()
cpu_imported = time.process_time()
from pathlib import Path
ws = open_workspace(Path(sys.argv[1]), Path(sys.argv[2]), register=False)
review = open_review(ws, clock=wall_clock_ms)
found = review.review("project")
done = time.perf_counter()
cpu = time.process_time() - cpu_imported
print(json.dumps({"import": imported - start, "review": done - imported, "cpu": cpu}))
"""


def make_notes(count: int, seed: int = 5) -> list[Note]:
    """Synthetic notes with reworded twins, links and file references."""
    rng = random.Random(seed)
    base = [note for _, note in synthetic_corpus(count, seed=seed, id_prefix="r").notes]
    notes: list[Note] = []
    for number, note in enumerate(base[: count - count // 20]):
        body = note.body
        if number % 7 == 0:
            target = base[rng.randrange(len(base))].id if number % 2 else "never-written"
            body += f"\nSee [[{target}]]."
        if number % 11 == 0:
            body += (
                f"\nCode in `{'src/app.py' if number % 2 else 'src/gone' + str(number) + '.py'}`."
            )
        stamp = NOW - number * 1_800_000  # the last ~100 days: some notes are unused
        notes.append(note.with_changes(body=body, created_at=stamp, updated_at=stamp))
    for note in notes[: count // 20]:
        words = note.summary.split()
        rng.shuffle(words)
        twin = " ".join(words[:-1] if len(words) > 3 else words)
        twin_note = Note(f"{note.id}-twin", twin or note.summary, "Twin.\n", note.tags)
        notes.append(twin_note.with_changes(created_at=NOW, updated_at=NOW))
    return notes[:count]


def write_project(root: Path, notes: Sequence[Note]) -> None:
    """A registered project whose MEMORY/ holds ``notes`` (bench setup: no fsync)."""
    (root / ".oharness").mkdir(parents=True)
    (root / ".oharness" / "project.json").write_text(json.dumps({"id": PROJECT_ID, "createdAt": 1}))
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("")
    memory = root / "MEMORY"
    memory.mkdir()
    hour_ago = time.time() - 3600  # settled files, as a folder is between edits
    for note in notes:
        path = memory / f"{note.id}.md"
        path.write_bytes(serialise_note_bytes(note))
        os.utime(path, (hour_ago, hour_ago))
    os.utime(memory, (hour_ago, hour_ago))


def cold(root: Path, home: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), str(home)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def warm(root: Path, home: Path, runs: int) -> tuple[float, int]:
    from oharness.memory.workspace import open_workspace, wall_clock_ms
    from oharness.review import open_review

    ws = open_workspace(root, home, register=False)
    review = open_review(ws, clock=wall_clock_ms)
    found = review.review("project")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        found = review.review("project")
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(found)


def naive_pairs(root: Path, home: Path, sample: int) -> float:
    from oharness.memory.workspace import open_workspace
    from oharness.recall.index import RecallIndex

    ws = open_workspace(root, home, register=False)
    index = RecallIndex()
    terms = [index.summary_terms(s.note) for s in ws.service.store("project").notes()[:sample]]
    start = time.perf_counter()
    for i, first in enumerate(terms):
        for second in terms[i + 1 :]:
            similarity(first, second)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes")
    args = parser.parse_args(argv)
    count = 1_000 if args.quick else 5_000
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "project", Path(tmp) / "home"
        home.mkdir()
        write_project(root, make_notes(count))
        first = cold(root, home)
        second = cold(root, home)
        warm_s, findings = warm(root, home, 5 if args.quick else 9)
        sample = min(count, 1_000)
        naive = naive_pairs(root, home, sample) * (count / sample) ** 2
    cold_s = min(first["review"], second["review"])
    cold_cpu = min(first["cpu"], second["cpu"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{count} notes, {findings} findings (load average {load:.1f}, {os.cpu_count()} CPUs)")
    print(
        f"cold: open + review {cold_s * 1000:7.0f} ms wall, {cold_cpu * 1000:.0f} ms CPU "
        f"(imports {first['import'] * 1000:.0f} ms)"
    )
    print(f"warm: review         {warm_s * 1000:7.1f} ms (median)")
    print(f"baseline: naive all-pairs similarity {naive * 1000:7.0f} ms (from {sample} notes, n²)")
    ok = warm_s <= 0.2 and cold_s <= 1.0
    print(f"targets (warm <= 200 ms, cold <= 1 s): {'met' if ok else 'MISSED'}")
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
