"""Deterministic multi-device simulation (spec 13.2).

Three or four devices and one sync server in one process: the real workspace, sync engine,
conflict resolver and server app, joined by an in-process transport, over an in-memory object
store. Each seed draws a random schedule (``simschedule``) of edits (new notes; edits of a
summary, of tags, of one line of a multi-line body -- far apart they merge, on the same or
adjacent lines they conflict; appends), deletes, re-creations of deleted ids, offline periods,
sync passes, tombstone expiry and conflict resolutions; a pass may carry one fault: 429/503,
refused connections and lost answers, the server's store failing between object upload and
manifest write or after the manifest write, the device dying at any atomic write (its base
state, a pulled note, a base copy, a backup, a conflict record) or just before/after a request,
another device syncing in the middle of the pass, or the user editing a note during it. A
crashed device restarts from its disk with new objects.

After every step the oracle (``simoracle``) checks that no acknowledged edit is lost and that
the base never claims what the server does not have; at the end every device comes online,
faults stop, conflicts are resolved and passes run until nothing changes: then every device
must hold the server's notes, deleted notes must have stayed deleted unless edited again, and
a pass after a clean one must be one request answered ``unchanged``.

The world also resets the storage or restores an older copy of it, leaves notes unreadable for
a while (repaired later, sometimes with an edit), writes byte-identical notes on two devices,
and puts a proxy with a changing request-body limit (413 above it) in front of the server.

Default run (``OHARNESS_SIM_PROFILE=ci``): ``OHARNESS_SIM_SEEDS`` short seeds (1000; 3 devices,
14 steps) and ``OHARNESS_SIM_LONG_SEEDS`` long ones (24; 4 devices, 100 steps), spread over
worker processes (``OHARNESS_SIM_WORKERS``, default: the CPU count up to 4).
``OHARNESS_SIM_PROFILE=long`` runs 4,000 short and 200 long seeds, for a developer's run. A
failing seed prints its trace (every step and what it did) and the command that replays it::

    OHARNESS_SIM_SEED=123 OHARNESS_SIM_STEPS=14 OHARNESS_SIM_DEVICES=3 \\
        pytest tests/simulation -k replay -s

Replay runs that one seed in-process, prints its trace, and keeps its devices' folders (the
path is printed) for inspection. Without ``OHARNESS_SIM_SEED`` it replays seed 0, so the test
always runs. A schedule depends only on the seed and the device count, step by step: a
smaller ``OHARNESS_SIM_STEPS`` replays a prefix of the same schedule (then quiescence), which
finds the first step that matters. Long seeds are numbered from 1,000,000, so a seed number
also tells which run it came from.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from simbatch import BatchResult, run_seeds, scratch_folder
from simrun import run_seed
from simschedule import ScheduleShape, fault_labels

SHORT = ScheduleShape(devices=3, steps=14)
LONG = ScheduleShape(devices=4, steps=100)
#: Long seeds are numbered from here, so no seed number means two schedules.
LONG_FIRST_SEED = 1_000_000
#: The same schedules with the account end-to-end encrypted (issue 31): the seeds of the
#: unencrypted run from the first on, every device syncing sealed.
SEALED_SHORT = ScheduleShape(devices=3, steps=14, encrypted=True)
SEALED_LONG = ScheduleShape(devices=4, steps=100, encrypted=True)


#: Seed counts per profile (``OHARNESS_SIM_PROFILE``): ``ci`` for the test command, ``long``
#: for a developer's run before a release (about ten minutes on two cores).
PROFILES = {
    "ci": {"short": 1000, "long": 24, "sealed short": 200, "sealed long": 6},
    "long": {"short": 4000, "long": 200, "sealed short": 1000, "sealed long": 50},
}


def _profile(kind: str) -> int:
    name = os.environ.get("OHARNESS_SIM_PROFILE", "ci")
    if name not in PROFILES:
        raise ValueError(f"OHARNESS_SIM_PROFILE={name!r}: use one of {sorted(PROFILES)}")
    return PROFILES[name][kind]


def _count(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with scratch_folder(tmp_path_factory.mktemp("simulation")) as folder:
        yield folder


def _run(kind: str, variable: str, shape: ScheduleShape, folder: Path, first: int) -> BatchResult:
    """The profile's seeds of one kind (``variable`` overrides their count) from ``first``."""
    count = _count(variable, _profile(kind))
    return run_seeds(list(range(first, first + count)), shape, folder)


@pytest.fixture(scope="module")
def short_run(scratch: Path) -> BatchResult:
    return _run("short", "OHARNESS_SIM_SEEDS", SHORT, scratch / "short", 0)


@pytest.fixture(scope="module")
def long_run(scratch: Path) -> BatchResult:
    return _run("long", "OHARNESS_SIM_LONG_SEEDS", LONG, scratch / "long", LONG_FIRST_SEED)


@pytest.fixture(scope="module")
def sealed_short_run(scratch: Path) -> BatchResult:
    return _run(
        "sealed short", "OHARNESS_SIM_SEALED_SEEDS", SEALED_SHORT, scratch / "sealed-short", 0
    )


@pytest.fixture(scope="module")
def sealed_long_run(scratch: Path) -> BatchResult:
    folder = scratch / "sealed-long"
    return _run(
        "sealed long", "OHARNESS_SIM_SEALED_LONG_SEEDS", SEALED_LONG, folder, LONG_FIRST_SEED
    )


def test_encrypted_schedules_keep_every_invariant(
    sealed_short_run: BatchResult, sealed_long_run: BatchResult
) -> None:
    """The same schedules, faults and oracle with every device syncing sealed: the storage
    reset loses the key envelope too (a device puts its copy back), a restore brings an older
    manifest of sealed revisions."""
    for run in (sealed_short_run, sealed_long_run):
        if run.failures:
            pytest.fail(run.summary(), pytrace=False)
    stats = sealed_short_run.stats + sealed_long_run.stats
    happened = ["merged", "conflicts", "pulled", "deleted_here", "crash", "reset", "restore"]
    assert not [name for name in happened if stats[name] == 0], stats


def test_short_schedules_keep_every_invariant(short_run: BatchResult) -> None:
    if short_run.failures:
        pytest.fail(short_run.summary(), pytrace=False)


def test_long_schedules_keep_every_invariant(long_run: BatchResult) -> None:
    if long_run.failures:
        pytest.fail(long_run.summary(), pytrace=False)


def test_the_schedules_exercise_every_fault_and_outcome(
    short_run: BatchResult, long_run: BatchResult
) -> None:
    """A simulation whose faults never fire proves nothing: every fault family must have
    fired, and passes must have merged, conflicted, pulled deletions and so on."""
    if short_run.seeds < 500:
        pytest.skip(f"coverage is judged on at least 500 seeds, not {short_run.seeds}")
    stats = short_run.stats + long_run.stats
    expected = [f"{label}:fired" for label in fault_labels(SHORT)] + [
        "crash",
        "failed:network",
        "failed:unavailable",
        "failed:rate_limited",
        "merged",
        "conflicts",
        "pulled",
        "deleted_here",
        "idempotence checked",
        "resolve:local",
        "resolve:cloud",
        "resolve:both",
        "resolve:text",
        "expire",
        "protocol",
        "wait",
        "protocol 2 refused (426)",
        "typed notes held back under protocol 1",
    ]
    missing = [name for name in expected if stats[name] == 0]
    seeds = short_run.seeds + long_run.seeds
    assert not missing, f"never happened in {seeds} seeds: {missing}"


def test_replay(tmp_path: Path) -> None:
    """Replay one seed (``OHARNESS_SIM_SEED``, default 0) in-process and print its trace."""
    seed = _count("OHARNESS_SIM_SEED", 0)
    shape = ScheduleShape(
        devices=_count("OHARNESS_SIM_DEVICES", SHORT.devices),
        steps=_count("OHARNESS_SIM_STEPS", SHORT.steps),
        encrypted=os.environ.get("OHARNESS_SIM_ENCRYPTED") == "1",
    )
    report = run_seed(seed, shape, tmp_path / f"seed-{seed}", keep=True)
    print(f"seed {seed}: {shape.devices} devices, {shape.steps} steps; folders in {tmp_path}")
    print("\n".join(report.trace))
    if report.failed:
        pytest.fail(report.describe(), pytrace=False)
