"""The memory plugin's background syncer on the process-wide coordinator (spec 07.5, 09.1)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from harness_helpers import MakeHarness

from oharness.harness import memory_sync
from oharness.harness.memory_plugin import MemoryPlugin, MemoryPluginOptions
from oharness.harness.scripted import ScriptedModel, text_reply, tool_reply
from oharness.sync.coordinator import SyncCoordinator
from oharness.sync.sync_service import PassReport, SyncTarget
from oharness.types import Clock


class Switch:
    def enabled(self) -> bool:
        return True

    def set_enabled(self, enabled: bool) -> None:
        return None


class FakePasses:
    """Stands in for SyncService: records passes, never touches the network."""

    def __init__(self) -> None:
        self.cancelled: Callable[[], bool] | None = None
        self.runs: list[str] = []

    @property
    def settings(self) -> Switch:
        return Switch()

    def run(self, target: SyncTarget, *, progress: object = None) -> PassReport:
        self.runs.append(target.scope)
        return PassReport(target)


class Spy(SyncCoordinator):
    def __init__(self, clock: Clock) -> None:
        super().__init__(FakePasses(), clock=clock)
        self.calls: list[str] = []

    def notify_write(self, target: SyncTarget, now: int | None = None) -> bool:
        self.calls.append(f"write {target.scope}")
        return super().notify_write(target, now)

    def touch(self, target: SyncTarget, now: int | None = None) -> bool:
        self.calls.append(f"touch {target.scope}")
        return super().touch(target, now)


def test_the_folders_are_registered_and_writes_reported(
    make_harness: MakeHarness, model: ScriptedModel, clock: Clock
) -> None:
    coordinator = Spy(clock)
    model.add(
        tool_reply("remember", {"summary": "Tea at four", "body": "Always.", "type": "user"}),
        text_reply("ok"),
    )
    harness = make_harness(memory=MemoryPluginOptions(sync_coordinator=coordinator))
    assert sorted(target.scope for target in coordinator.targets()) == ["project", "user"]
    harness.send(harness.new_session(), "remember tea")
    assert coordinator.calls == ["touch project", "write user"]
    harness.close()
    assert coordinator.targets() == []


def test_nothing_runs_before_sync_is_set_up(make_harness: MakeHarness) -> None:
    harness = make_harness(memory=MemoryPluginOptions())
    plugin = harness.host.plugin("memory")
    assert isinstance(plugin, MemoryPlugin) and plugin.sync is not None
    assert not plugin.sync.active and memory_sync._shared == {}


def test_one_coordinator_per_home_shared_by_harnesses(
    make_harness: MakeHarness, home: Path
) -> None:
    (home / "cloud.json").write_text(json.dumps({"origin": "http://127.0.0.1:9"}), encoding="utf-8")
    first = make_harness(memory=MemoryPluginOptions())
    second = make_harness(memory=MemoryPluginOptions())
    [shared] = memory_sync._shared.values()
    assert shared.users == 2 and shared.loop is not None and shared.loop.running
    assert len(shared.coordinator.targets()) == 2  # the same two folders, scheduled once
    first.close()
    assert shared.loop.running
    second.close()
    assert memory_sync._shared == {} and not shared.loop.running
