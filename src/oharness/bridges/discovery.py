"""Where a running daemon is: ``daemon.json`` (its URL) and ``daemon-token`` in the home.

The same two files :func:`oharness.sdk.find_daemon` reads, with the standard library only: the
``oharness.sdk`` package imports its HTTP client, which a prompt hook cannot afford.
"""

from __future__ import annotations

import json
from pathlib import Path


def read_daemon_address(home: Path) -> tuple[str, str]:
    """``(url, token)`` of the daemon of ``home``; ``OSError``/``ValueError`` when none runs."""
    info = json.loads((home / "daemon.json").read_text("utf-8"))
    token = (home / "daemon-token").read_text("utf-8").strip()
    url = info.get("url") if isinstance(info, dict) else None
    if not isinstance(url, str) or not url or not token:
        raise ValueError(f"{home / 'daemon.json'} names no daemon URL")
    return url, token
