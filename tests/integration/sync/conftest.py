from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
_TESTS = str(Path(__file__).resolve().parents[2])
for _path in (_HERE, _TESTS):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from s3server import s3_server  # noqa: E402, F401
