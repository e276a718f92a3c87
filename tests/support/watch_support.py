"""Helpers for tests of the daemon's folder watching (imported by bare name: the root conftest
puts ``tests/support`` on ``sys.path``).

- :class:`Walks`: :func:`~oharness.daemon.background.folder_watch.folder_signature`, counting the
  walks of each folder;
- :class:`Seconds`: a clock the test moves by hand.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from oharness.daemon.background.folder_watch import Signature, folder_signature


class Walks:
    """:func:`folder_signature`, counting the walks of each folder."""

    def __init__(self) -> None:
        self.counts: Counter[Path] = Counter()

    def __call__(self, folder: Path) -> Signature:
        self.counts[folder] += 1
        return folder_signature(folder)


class Seconds:
    """A monotonic clock in seconds, moved by setting :attr:`now`."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now
