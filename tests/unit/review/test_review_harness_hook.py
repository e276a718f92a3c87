"""The memory plugin runs background consolidation where a harness runs (spec 05.3)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from oharness.harness.consolidation import ConsolidationService
from oharness.harness.harness import HarnessOptions, create_harness
from oharness.harness.memory_plugin import MEMORY_PLUGIN_ID, MemoryPlugin, MemoryPluginOptions
from oharness.harness.providers import Models
from oharness.harness.scripted import ScriptedModel, text_reply
from oharness.memory.workspace import Workspace

if TYPE_CHECKING:
    from conftest import FakeClock


def _consolidation(
    workspace: Workspace, clock: FakeClock, **memory: Any
) -> ConsolidationService | None:
    options = HarnessOptions(
        workspace=workspace,
        models=Models(ScriptedModel(fallback=text_reply("ok"))),
        clock=clock,
        entry_points=None,
        memory=MemoryPluginOptions(background_sync=False, **memory),
    )
    harness = create_harness(options)
    try:
        plugin = harness.host.plugin(MEMORY_PLUGIN_ID)
        assert isinstance(plugin, MemoryPlugin)
        return plugin.consolidation
    finally:
        started = time.monotonic()
        harness.close()
        assert time.monotonic() - started < 5  # the loop thread stops promptly


def test_a_harness_with_a_model_runs_consolidation(workspace: Workspace, clock: FakeClock) -> None:
    consolidation = _consolidation(workspace, clock)
    assert consolidation is not None and consolidation.consolidator is not None


def test_it_can_be_left_out(workspace: Workspace, clock: FakeClock) -> None:
    assert _consolidation(workspace, clock, background_consolidation=False) is None
