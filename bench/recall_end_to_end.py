"""Per-message recall through the real stores (spec 03.3): notes as files in two scopes.

Where ``recall_latency.py`` measures the index alone, this measures what a host pays per user
message: the stores' refresh (a folder ``stat``, and every 2 s a rotating spot check of the
files for in-place edits), the index update, scoring and rendering the ``<recalled-memory>``
block. Also the time a new process needs to open the workspace and have the index ready from
the derived cache.

    python bench/recall_end_to_end.py            # 10,000 notes (two scopes of 5,000)
    python bench/recall_end_to_end.py --quick    # 1,000 notes, for CI
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _support import lay_out_corpus
from recall_corpus import synthetic_messages

from oharness.memory.attach import recall_for_message
from oharness.memory.scope_recall import MemoryRecall
from oharness.memory.workspace import Workspace, open_workspace


def _percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    return pick(0.5), pick(0.95), pick(0.99)


def _measure(workspace: Workspace, recall: MemoryRecall, messages: list[str], spot: bool) -> str:
    times = []
    for message in messages:
        if spot:  # as if the previous message came more than sweep_interval ago
            for scope in workspace.service.available_scopes():
                cache = workspace.service.store(scope).cache
                cache._last_sweep = (cache._last_sweep or 0.0) - 3.0
        started = time.perf_counter()
        recall_for_message(recall, message, record=False)
        times.append((time.perf_counter() - started) * 1000)
    p50, p95, p99 = _percentiles(times)
    return f"{p50:8.2f} {p95:8.2f} {p99:8.2f} {len(times):6d}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes, 50 messages")
    args = parser.parse_args(argv)
    count, message_count = (1_000, 50) if args.quick else (10_000, 300)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        laid = lay_out_corpus(root, count, aged=False)
        project, home, corpus = laid.project, laid.home, laid.corpus
        messages = synthetic_messages(corpus, message_count)

        first = open_workspace(project, home, register=False)
        started = time.perf_counter()
        assert first.service.recall is not None
        first.service.recall.index()
        build = time.perf_counter() - started
        first.service.recall.flush_cache(force=True)

        started = time.perf_counter()
        workspace = open_workspace(project, home, register=False)
        recall = workspace.service.recall
        assert recall is not None
        recall.index()
        ready = time.perf_counter() - started

        print(f"{count:,} notes as files, two scopes")
        print(f"first build (load files, tokenise, index)     {build:6.2f} s")
        print(f"new workspace with the cache: ready           {ready:6.2f} s   bar <= 1 s")
        print()
        print("per message (ms)                                p50      p95      p99      n")
        tight = _measure(workspace, recall, messages, False)
        spaced = _measure(workspace, recall, messages, True)
        print(f"back-to-back messages                      {tight}")
        print(f"each message after > 2 s (spot check)      {spaced}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
