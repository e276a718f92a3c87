"""Fixtures for the contract suites: the S3 test server for the S3 backend."""

from __future__ import annotations

import sys
from pathlib import Path

# tests/ holds shared helper modules (no package), so make it importable explicitly.
_TESTS_DIRECTORY = str(Path(__file__).resolve().parents[1])
if _TESTS_DIRECTORY not in sys.path:
    sys.path.insert(0, _TESTS_DIRECTORY)

from s3server import s3_server  # noqa: E402, F401
