"""Storage operations per user per day, and what they cost, for typical profiles (docs/scaling.md).

Each device of a profile runs the real :class:`~oharness.sync.coordinator.SyncCoordinator` over
one simulated day (an injected clock; the machine is on for its hours, its projects in use for
theirs, local writes spread over them). Every pass is priced with the storage operations the
server asks for it, measured by running the real server over a counting store
(``bench/storage_ops.py``): an idle check, a delta, a commit. Then per user per day: passes,
reads ("class B"), writes and lists ("class A"), bytes, and the monthly bill at R2 and S3 list
prices for 10,000, 100,000 and 1,000,000 users::

    python bench/sync_cost.py            # the three profiles
    python bench/sync_cost.py --quick    # the same (it takes a few seconds), for CI
    python bench/sync_cost.py --json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from storage_ops import run_backend

from oharness.notes.store import NoteStore
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync import coordinator as coordinator_module
from oharness.sync.coordinator import SyncCoordinator
from oharness.sync.result import PassResult
from oharness.sync.sync_service import PassReport, SyncTarget

HOUR = 3_600_000
DAY = 24 * HOUR
#: list prices in USD per million requests (R2: Cloudflare; S3: Standard, us-east-1), 2025
PRICES = {
    "R2": {"class_a": 4.50, "class_b": 0.36},
    "S3": {"class_a": 5.00, "class_b": 0.40},
}
USERS = (10_000, 100_000, 1_000_000)
#: notes per scope assumed for the bytes column (a manifest entry is ~195 bytes)
NOTES_PER_SCOPE = 500


@dataclass
class Scope:
    """One scope on the server: its version and what each version changed."""

    name: str
    changes: list[int] = field(default_factory=list)  # notes changed by version 1, 2, ...


@dataclass
class Device:
    name: str
    on: tuple[int, int]  # hours of the day the machine is on (start, end)
    projects: dict[str, tuple[int, int]]  # project -> hours in use
    writes: dict[str, int]  # scope -> local writes a day


@dataclass
class Costs:
    """The measured storage operations of one protocol operation."""

    idle: tuple[int, int]  # (reads, writes)
    delta_base: tuple[int, int]  # a delta's reads besides one per changed body
    commit_base: tuple[int, int]  # a commit's operations besides one put per note


@dataclass
class Tally:
    passes: int = 0
    idle: int = 0  # passes answered by an idle check alone
    reads: int = 0
    writes: int = 0
    bytes: int = 0

    def add(self, reads: int, writes: int, size: int = 0) -> None:
        self.reads += reads
        self.writes += writes
        self.bytes += size


class World:
    """Scripted passes: each device pulls what others committed and pushes its own writes."""

    def __init__(self, costs: Costs, manifest_bytes: int) -> None:
        self.costs = costs
        self.manifest_bytes = manifest_bytes
        self.scopes: dict[str, Scope] = {}
        self.seen: dict[tuple[str, str], int] = {}  # (device, scope) -> version seen
        self.pending: dict[tuple[str, str], int] = {}  # (device, scope) -> local writes
        self.tally = Tally()

    def runner(self, device: str) -> Any:
        world = self

        class Switch:
            def enabled(self) -> bool:
                return True

            def set_enabled(self, enabled: bool) -> None:
                pass

        class Runner:
            cancelled = None
            settings = Switch()

            def run(self, target: SyncTarget, *, progress: Any = None) -> PassReport:
                return world.run(device, target)

        return Runner()

    def run(self, device: str, target: SyncTarget) -> PassReport:
        scope = self.scopes.setdefault(target.scope_key, Scope(target.scope_key))
        key = (device, target.scope_key)
        behind = scope.changes[self.seen.get(key, 0) :]
        self.tally.passes += 1
        if behind:
            reads, writes = self.costs.delta_base
            self.tally.add(reads + sum(behind), writes, self.manifest_bytes)
        local = self.pending.pop(key, 0)
        if not behind:
            self.tally.add(*self.costs.idle)
            self.tally.idle += not local
        if local:
            reads, writes = self.costs.commit_base
            self.tally.add(reads, writes + local, self.manifest_bytes)
            scope.changes.append(local)
        self.seen[key] = len(scope.changes)
        return PassReport(target, result=PassResult(changed_anything=bool(behind or local)))


def simulate(devices: list[Device], costs: Costs, root: Path) -> Tally:
    """One day of every device (after a day of warm-up, so backoffs are in steady state)."""
    world = World(costs, NOTES_PER_SCOPE * 195)
    clocks: dict[str, list[int]] = {}
    machines = []
    for device in devices:
        now = [0]
        clocks[device.name] = now
        coordinator = SyncCoordinator(world.runner(device.name), clock=lambda n=now: n[0])
        targets = {}
        for scope in ("user", *device.projects):
            directory = root / device.name / scope
            directory.mkdir(parents=True)
            kind = "user" if scope == "user" else "project"
            store = NoteStore(directory, scope=kind, lock_path=directory.parent / f"{scope}.lock")
            targets[scope] = coordinator.register(
                SyncTarget(
                    kind, f"scope:{scope}", store, project_id=None if kind == "user" else scope
                )
            )
        machines.append((device, coordinator, targets, now))
    for minute in range(2 * 24 * 60):
        if minute == 24 * 60:
            world.tally = Tally()  # count the second day only
        hour = (minute // 60) % 24
        for device, coordinator, targets, now in machines:
            if not device.on[0] <= hour < device.on[1]:
                continue  # asleep: its schedule resumes when it wakes
            for second in range(0, 60, 5):
                now[0] = minute * 60_000 + second * 1000
                _events(device, coordinator, targets, world, minute, second)
                coordinator.tick()
    return world.tally


def simulate_capped(devices: list[Device], costs: Costs, root: Path) -> Tally:
    """The baseline: the schedule of the previous release (backoff capped at 5 minutes)."""
    saved = coordinator_module.IDLE_INTERVALS_MS
    coordinator_module.IDLE_INTERVALS_MS = ()
    try:
        return simulate(devices, costs, root)
    finally:
        coordinator_module.IDLE_INTERVALS_MS = saved


def _events(
    device: Device,
    coordinator: SyncCoordinator,
    targets: dict[str, SyncTarget],
    world: World,
    minute: int,
    second: int,
) -> None:
    hour, in_hour = (minute // 60) % 24, minute % 60
    for project, (start, end) in device.projects.items():
        if start <= hour < end and in_hour % 5 == 0 and second == 0:
            coordinator.touch(targets[project])  # a message sent in the project
    if second != 0:
        return
    for scope, per_day in device.writes.items():
        start, end = device.projects.get(scope, device.on)
        active = (end - start) * 60
        if per_day and start <= hour < end:
            offset = (hour - start) * 60 + in_hour
            if offset % max(1, active // per_day) == 0:
                key = (device.name, f"scope:{scope}")
                world.pending[key] = world.pending.get(key, 0) + 1
                coordinator.notify_write(targets[scope])


PROFILES: dict[str, list[Device]] = {
    "one laptop": [
        Device("laptop", (9, 18), {"work": (9, 17)}, {"user": 2, "work": 8}),
    ],
    "laptop + desktop": [
        Device("laptop", (9, 18), {"work": (9, 13)}, {"user": 1, "work": 4}),
        Device("desktop", (0, 24), {"work": (14, 18)}, {"user": 1, "work": 4}),
    ],
    "heavy agent user": [
        Device("laptop", (8, 20), {"a": (8, 20), "b": (8, 20)}, {"user": 20, "a": 60, "b": 60}),
        Device("desktop", (0, 24), {"a": (0, 24), "c": (8, 20)}, {"user": 20, "a": 60, "c": 60}),
        Device("server", (0, 24), {"c": (0, 24)}, {"c": 100}),
    ],
}


def measured_costs() -> tuple[Costs, dict[str, dict[str, int]]]:
    rows = run_backend("memory", MemoryObjectStore(), 300)

    def split(row: dict[str, int]) -> tuple[int, int]:
        reads = row["get"] + row["conditional_get"]
        return reads, row["total"] - reads

    delta_reads, delta_writes = split(rows["delta with 1 change"])
    commit_reads, commit_writes = split(rows["commit of 1 note"])
    costs = Costs(
        idle=split(rows["idle check"]),
        delta_base=(delta_reads - 1, delta_writes),
        commit_base=(commit_reads, commit_writes - 1),
    )
    return costs, rows


def monthly(tally: Tally, users: int, prices: dict[str, float]) -> float:
    per_day = tally.reads * prices["class_b"] + tally.writes * prices["class_a"]
    return per_day * 30 * users / 1_000_000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="the same run (it is quick)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    costs, _ = measured_costs()
    results = []
    for name, devices in PROFILES.items():
        with tempfile.TemporaryDirectory(prefix="oharness-cost-") as tmp:
            tally = simulate(devices, costs, Path(tmp))
        with tempfile.TemporaryDirectory(prefix="oharness-cost-") as tmp:
            capped = simulate_capped(devices, costs, Path(tmp))
        idle = Tally(reads=tally.idle * costs.idle[0])
        row: dict[str, Any] = {
            "profile": name,
            "passes/day": tally.passes,
            "idle checks/day": tally.idle,
            "reads/day": tally.reads,
            "writes+lists/day": tally.writes,
            "storage MB/day": round(tally.bytes / 1e6, 1),
            "passes/day, 5-min cap": capped.passes,
        }
        for provider, prices in PRICES.items():
            for users in USERS:
                row[f"{provider} $/month, {users:,} users"] = round(monthly(tally, users, prices))
            row[f"{provider} idle checks $/month, 1M"] = round(monthly(idle, 1_000_000, prices))
        results.append(row)
    if args.json:
        print(json.dumps({"costs": costs.__dict__, "profiles": results}, indent=2))
        return 0
    print(
        f"per pass: idle {costs.idle}, delta {costs.delta_base} + 1 read per note, "
        f"commit {costs.commit_base} + 1 write per note   (reads, writes)"
    )
    keys = list(results[0])
    width = max(len(key) for key in keys)
    print(f"{'':{width}}  " + "  ".join(f"{row['profile']:>17}" for row in results))
    for key in keys[1:]:
        print(f"{key:{width}}  " + "  ".join(f"{row[key]!s:>17}" for row in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
