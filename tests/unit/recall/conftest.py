"""Fixtures for the recall tests."""

from __future__ import annotations

import pytest
from recall_helpers import Calibration, load_calibration


@pytest.fixture(scope="session")
def calibration() -> Calibration:
    return load_calibration()
