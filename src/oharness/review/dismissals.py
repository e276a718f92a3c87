"""Dismissed findings, kept on this machine only (spec 05.1): never synced.

``$OHARNESS_HOME/memory-review/dismissals.json`` maps a finding id to the content hashes of
the notes it was about when dismissed. A finding stays hidden only while every one of those
notes still has that hash: editing one of them brings it back. Writes are atomic and taken
under a file lock, so two processes dismissing at once both keep their entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import filelock

from oharness.errors import StorageError
from oharness.fsio import PRIVATE_FILE_MODE, atomic_write, make_directory
from oharness.review.findings import Finding
from oharness.types import Clock

FILE_NAME: Final = "dismissals.json"
_FORMAT: Final = 1


class DismissalStore:
    """The dismissals of one ``OHARNESS_HOME``."""

    def __init__(self, directory: Path, *, clock: Clock) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self._clock = clock

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # unreadable: findings show again, which loses nothing
        entries = data.get("dismissed") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            return {}
        return {
            key: value
            for key, value in entries.items()
            if isinstance(key, str)
            and isinstance(value, dict)
            and isinstance(value.get("hashes"), list)
        }

    def entries(self) -> Mapping[str, dict[str, Any]]:
        """Every stored dismissal by finding id."""
        return self._read()

    def is_dismissed(self, finding: Finding, entries: Mapping[str, dict[str, Any]]) -> bool:
        """True while the finding's notes are exactly the versions that were dismissed."""
        entry = entries.get(finding.id)
        return entry is not None and list(entry["hashes"]) == list(finding.hashes)

    def visible(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings not dismissed (at their current versions)."""
        entries = self._read()
        return [finding for finding in findings if not self.is_dismissed(finding, entries)]

    def dismiss(self, finding: Finding, scope_key: str) -> dict[str, Any]:
        """Hide ``finding`` until one of its notes changes; returns the stored entry."""
        entry = {
            "hashes": list(finding.hashes),
            "notes": list(finding.notes),
            "kind": finding.kind,
            "scopeKey": scope_key,
            "at": self._clock(),
        }
        try:
            make_directory(self.directory)
            with filelock.FileLock(str(self.path) + ".lock", timeout=10, mode=PRIVATE_FILE_MODE):
                entries = self._read()
                entries[finding.id] = entry
                payload = {"format": _FORMAT, "dismissed": entries}
                text = json.dumps(payload, ensure_ascii=False, indent=1, sort_keys=True)
                atomic_write(self.path, text.encode("utf-8"))
        except (OSError, filelock.Timeout) as exc:
            raise StorageError(
                f"could not save the dismissal in {self.path}: {exc}; nothing was dismissed",
                path=str(self.path),
            ) from exc
        return entry
