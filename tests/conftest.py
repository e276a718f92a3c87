"""Shared fixtures: a temporary OHARNESS_HOME, projects, a fixed clock and id source."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from oharness.memory.workspace import Workspace, open_workspace

# Helpers shared across test folders, imported by bare name (tests/support/*.py).
_SUPPORT = str(Path(__file__).resolve().parent / "support")
if _SUPPORT not in sys.path:
    sys.path.insert(0, _SUPPORT)

# Hypothesis profiles: "ci" (the default) draws the same examples on every run, so a red test
# command is red again on rerun; "dev" (HYPOTHESIS_PROFILE=dev) searches ten times longer with
# fresh randomness and the example database, for hunting before a change lands.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
# Both profiles name every setting they rely on: under a CI environment hypothesis loads its
# own derandomised "ci" profile first, and a profile registered without a parent inherits it.
settings.register_profile(
    "dev",
    parent=settings.get_profile("default"),
    derandomize=False,
    max_examples=1000,
    deadline=None,
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


class FakeClock:
    """A clock that only moves when told (milliseconds)."""

    def __init__(self, start: int = 1_789_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def counting_hex() -> Callable[[int], str]:
    """Deterministic 'random' hex: 001, 002, ..."""
    counter = itertools.count(1)

    def source(count: int) -> str:
        return format(next(counter), "x").rjust(count, "0")[-count:]

    return source


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def open_ws(home: Path, project_dir: Path, clock: FakeClock) -> Iterator[Callable[..., Workspace]]:
    hex_source = counting_hex()

    def factory(start: Path | None = None, *, register: bool = True) -> Workspace:
        return open_workspace(
            start or project_dir, home, register=register, clock=clock, hex_source=hex_source
        )

    yield factory


@pytest.fixture
def workspace(open_ws: Callable[..., Workspace]) -> Workspace:
    return open_ws()
