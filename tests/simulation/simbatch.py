"""Running many seeds: in chunks, on every CPU (worker processes), in a fast scratch folder.

Seeds are independent, so chunks of them run in separate processes (``spawn``: nothing of the
parent's threads or open files is inherited). Each chunk returns the counters of every seed and
the full report of each failing one. ``OHARNESS_SIM_WORKERS=1`` runs everything in-process.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from simrun import SeedReport, run_seed
from simschedule import ScheduleShape

#: Free space /dev/shm must have to be used as scratch (it is RAM; CI containers keep it small).
_SHM_MIN_FREE = 512 * 1024 * 1024


@dataclass
class BatchResult:
    """Every seed's counters, and the reports of the seeds that failed."""

    seeds: int = 0
    stats: Counter[str] = field(default_factory=Counter)
    failures: list[SeedReport] = field(default_factory=list)

    def add(self, other: BatchResult) -> None:
        self.seeds += other.seeds
        self.stats.update(other.stats)
        self.failures.extend(other.failures)

    def summary(self, shown: int = 1) -> str:
        """The failing seeds grouped by their first violation, and the first traces in full."""
        groups: dict[str, list[int]] = {}
        for report in self.failures:
            groups.setdefault(_signature(report.violations[0]), []).append(report.seed)
        lines = [f"{len(self.failures)} of {self.seeds} seeds failed:"]
        lines += [f"  {len(seeds)} x {kind}: seeds {seeds[:12]}" for kind, seeds in groups.items()]
        for report in sorted(self.failures, key=lambda r: len(r.trace))[:shown]:
            lines += ["", report.describe()]
        return "\n".join(lines)


def _signature(violation: str) -> str:
    text = violation.split(": ", 1)[-1]
    return text.split(" ", 1)[0] if text.startswith("(") else text[:60]


def run_chunk(seeds: list[int], shape: ScheduleShape, directory: str) -> BatchResult:
    """Run ``seeds`` one after another below ``directory``."""
    # In a worker process nothing configures logging: keep the server's expected warnings
    # (injected storage faults) from reaching stderr through logging's last-resort handler.
    logging.getLogger("oharness").addHandler(logging.NullHandler())
    result = BatchResult()
    for seed in seeds:
        report = run_seed(seed, shape, Path(directory) / f"seed-{seed}")
        result.seeds += 1
        result.stats.update(report.stats)
        if report.failed:
            result.failures.append(report)
    return result


def worker_count() -> int:
    configured = os.environ.get("OHARNESS_SIM_WORKERS")
    if configured:
        return max(1, int(configured))
    return max(1, min(4, os.cpu_count() or 1))


def run_seeds(seeds: list[int], shape: ScheduleShape, directory: Path) -> BatchResult:
    """Run every seed, spread over :func:`worker_count` processes."""
    workers = min(worker_count(), max(1, len(seeds) // 8))
    if workers == 1:
        return run_chunk(seeds, shape, str(directory))
    chunks = [seeds[start :: workers * 4] for start in range(workers * 4)]
    total = BatchResult()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [
            pool.submit(run_chunk, chunk, shape, str(directory)) for chunk in chunks if chunk
        ]
        for future in futures:
            total.add(future.result())
    total.failures.sort(key=lambda report: report.seed)
    return total


@contextmanager
def scratch_folder(fallback: Path) -> Iterator[Path]:
    """A folder for the seeds' homes: in RAM when /dev/shm is roomy, else ``fallback``.

    Every seed writes a few hundred small files with fsync; on a RAM disk that costs nothing,
    which is what lets thousands of seeds fit the test budget (the real disk paths are
    covered by the integration tests)."""
    shm = Path("/dev/shm")
    try:
        roomy = shm.is_dir() and os.statvfs(shm).f_bavail * os.statvfs(shm).f_frsize > _SHM_MIN_FREE
    except OSError:
        roomy = False
    if not roomy:
        yield fallback
        return
    folder = Path(tempfile.mkdtemp(prefix="oharness-sim-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
