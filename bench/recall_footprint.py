"""Memory and whole-process costs of recall, each measured in a fresh child process.

- ``build_peak``: a process that builds the index of N synthetic notes from nothing; its
  maximum resident size (the first build's peak, imports included).
- ``loaded_resident``: a process that loads the derived cache and answers one message; its
  resident size then (what a long-lived process searching the notes holds), beside the size
  of a process that only imported Python and numpy.
- ``remember_process``: ``oharness memory remember`` as a whole CLI process in a project of N
  note files whose recall cache is warm (one remember before, not timed): wall time and peak.
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recall_corpus import Corpus, synthetic_corpus

from oharness.notes.format import serialise_note_bytes

# The peak is read from VmHWM: ``ru_maxrss`` of a child starts at its parent's size at the
# fork (Linux keeps it across exec), which here is the benchmark holding a whole index.
_BUILD = """
import json, marshal, sys
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
from oharness.notes.format import Note
rows = marshal.loads(open(sys.argv[1], "rb").read())
notes = [(scope, Note(i, summary, body, tuple(tags))) for scope, i, summary, body, tags in rows]
del rows
before = peak()
from oharness.recall.index import RecallIndex
index = RecallIndex()
index.add_many(notes)
index.recall("deploy window")
print(json.dumps({"peak_mb": peak(), "corpus_mb": before}))
"""

_BARE = """
import json, numpy
print(json.dumps({"rss_mb": int(open("/proc/self/statm").read().split()[1])
                  * 4096 / 2**20}))
"""


def _run(code: str, *args: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def build_peak(corpus: Corpus) -> dict[str, float]:
    """Peak resident MB of a process building the corpus's notes (and before the build)."""
    rows = [(s, n.id, n.summary, n.body, list(n.tags)) for s, n in corpus.notes]
    with tempfile.NamedTemporaryFile(suffix=".notes") as handle:
        handle.write(marshal.dumps(rows))
        handle.flush()
        return _run(_BUILD, handle.name)


def bare_resident() -> float:
    """Resident MB of a Python process that imported numpy and nothing else."""
    return _run(_BARE)["rss_mb"]


def write_project(root: Path, count: int) -> None:
    """A registered project whose MEMORY folder holds ``count`` seeded notes."""
    (root / ".oharness").mkdir(parents=True)
    (root / ".oharness" / "project.json").write_text(
        json.dumps({"id": "git-00000000000000000000000000000recallfoot", "createdAt": 1}),
        encoding="utf-8",
    )
    limit = {"memory": {"maxNotes": 2 * count + 1_000}}
    (root / ".oharness" / "config.json").write_text(json.dumps(limit), encoding="utf-8")
    folder = root / "MEMORY"
    folder.mkdir()
    for _, note in synthetic_corpus(count, seed=3).notes:
        (folder / f"{note.id}.md").write_bytes(serialise_note_bytes(note))


def remember_process(count: int, runs: int = 3) -> dict[str, float]:
    """Median wall seconds and peak MB of ``oharness memory remember`` at N notes (warm cache)."""
    oharness = str(Path(sys.executable).with_name("oharness"))
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch) / "project", Path(scratch) / "home"
        home.mkdir()
        write_project(root, count)
        env = {**os.environ, "OHARNESS_HOME": str(home)}
        walls: list[float] = []
        peaks: list[float] = []
        for number in range(runs + 1):
            started = time.perf_counter()
            subprocess.run(
                ["/usr/bin/time", "-f", "%M", oharness, "memory", "remember", "--project",
                 str(root), "-s", f"Footprint note {number}", "-b", "Deploy window is Tuesday."],
                capture_output=True, text=True, check=True, env=env,
            )  # fmt: skip
            wall = time.perf_counter() - started
            if number:  # the first one builds the cache
                walls.append(wall)
        for number in range(runs):
            done = subprocess.run(
                ["/usr/bin/time", "-f", "%M", oharness, "memory", "remember", "--project",
                 str(root), "-s", f"Peak note {number}", "-b", "Release train at noon."],
                capture_output=True, text=True, check=True, env=env,
            )  # fmt: skip
            peaks.append(int(done.stderr.strip().splitlines()[-1]) / 1024)
    walls.sort()
    peaks.sort()
    return {"wall": walls[len(walls) // 2], "peak_mb": peaks[len(peaks) // 2]}
