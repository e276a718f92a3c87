"""Fixtures for the demo tests: a private TMPDIR and a real home that must stay untouched."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from demo_support import RealHome  # noqa: E402


@pytest.fixture
def demo_tmp(tmp_path: Path) -> Path:
    path = tmp_path / "tmp"
    path.mkdir()
    return path


@pytest.fixture
def real_home(tmp_path: Path) -> Iterator[RealHome]:
    home = RealHome.make(tmp_path / "user-home")
    yield home
    home.assert_untouched()
