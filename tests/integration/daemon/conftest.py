"""Fixtures for the daemon tests: a live daemon on loopback over a temporary home and project."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE), str(_HERE.parent / "server")):  # the live sync server's helpers
    if _path not in sys.path:
        sys.path.insert(0, _path)
