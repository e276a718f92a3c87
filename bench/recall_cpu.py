"""Per-message recall CPU time, a single pass and warm, for this code and other versions of it.

10,000 synthetic notes (``recall_corpus.py``), 1,000 messages after 50 of warm-up. "Single
pass": each message once with the per-term tables and topic memo emptied at the start, so most
terms and candidates are new; "warm": the same messages again. CPU time (``time.process_time``)
and the minimum of ``--passes`` passes per message, so a busy machine measures the work rather
than the wait for a core. ``--compare DIR`` runs the same measurement, in alternation with this
code, on the ``src/`` of another checkout (e.g. ``git archive main src | tar -x -C DIR``)::

    python bench/recall_cpu.py [--compare DIR ...] [--rounds 2]
    python bench/recall_cpu.py --quick     # 1,000 notes, one pass, for CI
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def measure(notes: int, passes: int) -> dict[str, list[float]]:
    """p50 / p95 / p99 (ms) of a single pass and of warm messages, for the importable code."""
    sys.path.insert(0, str(HERE))
    from recall_corpus import synthetic_corpus, synthetic_messages

    from oharness.recall.index import RecallIndex

    corpus = synthetic_corpus(notes, seed=7)
    messages = synthetic_messages(corpus, 1_000, seed=8)
    index = RecallIndex()
    index.add_many(corpus.notes)
    first = [float("inf")] * len(messages)
    warm = [float("inf")] * len(messages)
    clock = time.process_time
    for _ in range(passes):
        _forget(index)
        for message in messages[:50]:
            index.recall(message)
        for samples in (first, warm):
            for number, message in enumerate(messages):
                started = clock()
                index.recall(message)
                samples[number] = min(samples[number], clock() - started)
    return {
        name: [float(v) for v in np.percentile(np.array(samples) * 1000, [50, 95, 99])]
        for name, samples in (("single pass", first), ("warm", warm))
    }


def _forget(index: object) -> None:
    """Empty what recall keeps between messages (versions without it keep nothing)."""
    postings = getattr(index, "_postings", None)
    if hasattr(postings, "version"):
        postings.version += 1  # type: ignore[union-attr]
    topics = getattr(index, "_topics", None)
    if topics is not None:
        topics.reset()


def run(source: Path | None, notes: int, passes: int) -> dict[str, list[float]]:
    """:func:`measure` in a new interpreter importing ``source/src`` (None: this checkout)."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source / "src")
    output = subprocess.run(
        [sys.executable, __file__, "--child", str(notes), str(passes)],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
    ).stdout
    result: dict[str, list[float]] = json.loads(output)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--compare", type=Path, action="append", default=[], metavar="DIR")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each version")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return 0
    notes, passes, rounds = (1_000, 1, 1) if args.quick else (10_000, args.passes, args.rounds)
    versions: list[Path | None] = [*args.compare, None]
    print(f"{notes:,} notes, 1,000 messages; CPU ms p50 / p95 / p99; load {os.getloadavg()[0]:.1f}")
    for _ in range(rounds):
        for source in versions:
            result = run(source, notes, passes)
            row = "  ".join(
                f"{name} {' / '.join(f'{v:.2f}' for v in values)}"
                for name, values in result.items()
            )
            print(f"{source or 'this checkout'!s:<28} {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
