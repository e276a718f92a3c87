"""Per-message recall CPU time, a single pass and warm, for this code and other versions of it.

10,000 synthetic notes (``recall_corpus.py``), 1,000 messages after 50 of warm-up. "Single
pass": each message once with the per-term tables and topic memo emptied at the start, so most
terms and candidates are new; "warm": the same messages again; "first message": the one right
after emptying them, which computes the gate's topic weights of every note (what a process
started for one prompt pays once). CPU time (``time.process_time``)
and the minimum of ``--passes`` passes per message, so a busy machine measures the work rather
than the wait for a core. ``--compare DIR`` runs the same measurement, in alternation with this
code, on the ``src/`` of another checkout (e.g. ``git archive main src | tar -x -C DIR``), and
checks that each version answers exactly as this one: every attached note and its score, and
the first search results, on this corpus and the calibration sets (``recall_rankings.py``)::

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
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def measure(notes: int, passes: int) -> dict[str, list[float]]:
    """p50 / p95 / p99 (ms) of a single pass and of warm messages, for the importable code."""
    sys.path.insert(0, str(HERE))
    from recall_corpus import synthetic_corpus, synthetic_messages
    from recall_rankings import forget

    from oharness.recall.index import RecallIndex

    corpus = synthetic_corpus(notes, seed=7)
    messages = synthetic_messages(corpus, 1_000, seed=8)
    index = RecallIndex()
    index.add_many(corpus.notes)
    first = [float("inf")] * len(messages)
    warm = [float("inf")] * len(messages)
    clock = time.process_time
    cold = float("inf")
    for _ in range(passes):
        forget(index)
        started = clock()
        index.recall(messages[0])  # renews what the gate keeps over all the notes
        cold = min(cold, clock() - started)
        for message in messages[1:50]:
            index.recall(message)
        for samples in (first, warm):
            for number, message in enumerate(messages):
                started = clock()
                index.recall(message)
                samples[number] = min(samples[number], clock() - started)
    figures = {
        name: [float(v) for v in np.percentile(np.array(samples) * 1000, [50, 95, 99])]
        for name, samples in (("single pass", first), ("warm", warm))
    }
    return {"first message": [cold * 1000], **figures}


def answers(quick: bool) -> dict[str, str]:
    """A fingerprint of every answer of ``recall_rankings.py``, for the importable code."""
    sys.path.insert(0, str(HERE))
    from recall_rankings import digest, rankings

    return digest(rankings(quick))


def run(source: Path | None, *arguments: str) -> Any:
    """This script's ``arguments`` in a new interpreter importing ``source/src`` (None: this
    checkout); its JSON output."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source / "src")
    output = subprocess.run(
        [sys.executable, __file__, *arguments],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
    ).stdout
    return json.loads(output)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--compare", type=Path, action="append", default=[], metavar="DIR")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each version")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--answers", choices=["quick", "full"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return 0
    if args.answers:
        print(json.dumps(answers(args.answers == "quick")))
        return 0
    notes, passes, rounds = (1_000, 1, 1) if args.quick else (10_000, args.passes, args.rounds)
    versions: list[Path | None] = [*args.compare, None]
    load = os.getloadavg()[0]
    print(f"{notes:,} notes, 1,000 messages; CPU ms (first; p50 / p95 / p99); load {load:.1f}")
    for _ in range(rounds):
        for source in versions:
            result = run(source, "--child", str(notes), str(passes))
            row = "  ".join(
                f"{name} {' / '.join(f'{v:.2f}' for v in values)}"
                for name, values in result.items()
            )
            print(f"{source or 'this checkout'!s:<28} {row}")
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    return _same_answers(args.compare, "quick" if args.quick else "full")


def _same_answers(others: list[Path], size: str) -> int:
    """Print whether every other version answers as this checkout; 1 when one does not."""
    if not others:
        return 0
    ours: dict[str, str] = run(None, "--answers", size)
    failed = 0
    for source in others:
        theirs: dict[str, str] = run(source, "--answers", size)
        differ = [name for name in ours if theirs.get(name) != ours[name]]
        verdict = "identical" if not differ else "DIFFERENT in " + ", ".join(differ)
        print(f"answers of {source} and this checkout ({len(ours)} cases): {verdict}")
        failed |= bool(differ)
    return failed


if __name__ == "__main__":
    sys.exit(main())
