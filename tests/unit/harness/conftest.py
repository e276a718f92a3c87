"""Harness fixtures: a harness over the test workspace, with a scripted model."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from harness_helpers import MakeHarness  # noqa: E402

from oharness.harness.harness import Harness, HarnessOptions, create_harness  # noqa: E402
from oharness.harness.memory_plugin import MemoryPluginOptions  # noqa: E402
from oharness.harness.providers import Models  # noqa: E402
from oharness.harness.scripted import ScriptedModel, text_reply  # noqa: E402
from oharness.memory.workspace import Workspace  # noqa: E402
from oharness.types import Clock  # noqa: E402


def _hex_counter() -> Callable[[int], str]:
    counter = itertools.count(1)
    return lambda count: format(next(counter), "x").rjust(count, "0")[-count:]


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(fallback=text_reply("ok"))


@pytest.fixture
def make_harness(workspace: Workspace, clock: Clock, model: ScriptedModel) -> Iterator[MakeHarness]:
    """``make_harness(**options)``: a harness over the test workspace (closed after the test)."""
    created: list[Harness] = []

    def factory(**options: Any) -> Harness:
        options.setdefault("workspace", workspace)
        options.setdefault("models", Models(model))
        options.setdefault("clock", clock)
        options.setdefault("hex_source", _hex_counter())
        options.setdefault("entry_points", None)
        options.setdefault("memory", MemoryPluginOptions(background_sync=False))
        harness = create_harness(HarnessOptions(**options))
        created.append(harness)
        return harness

    yield factory
    for harness in created:
        harness.close()
