"""Fixtures for the review integration tests: a live sync server on loopback, two machines."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (
    str(_HERE),
    *(str(_HERE.parent / d) for d in ("server", "harness")),
    str(_HERE.parents[1]),
):
    if _path not in sys.path:
        sys.path.insert(0, _path)
