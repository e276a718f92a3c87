"""Open conflicts of one scope (spec 07.3): records, and the four resolutions.

A conflict blocks only its note. The local file is never touched by the conflict itself (no
markers inside a note); the record keeps the last synced text, this machine's and the cloud's.
A resolution changes the local file and the base so that the next sync pass uploads (or not)
what the person chose; whatever is set aside is backed up first.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from oharness.errors import NotFoundError, ValidationError
from oharness.fsio import atomic_write, make_directory, remove_file
from oharness.notes.ids import check_id

Resolution = Literal["local", "cloud", "both", "text"]


@dataclass(frozen=True)
class ConflictRecord:
    """One open conflict."""

    id: str
    reason: str
    created_at: int
    base: str | None
    local: str | None
    cloud: str | None
    cloud_rev: str | None
    cloud_hash: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "reason": self.reason,
            "createdAt": self.created_at,
            "base": self.base,
            "local": self.local,
            "cloud": self.cloud,
            "cloudRev": self.cloud_rev,
            "cloudHash": self.cloud_hash,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConflictRecord:
        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        created = data.get("createdAt")
        return cls(
            id=check_id(data.get("id")),
            reason=text("reason") or "conflict",
            created_at=created if isinstance(created, int) else 0,
            base=text("base"),
            local=text("local"),
            cloud=text("cloud"),
            cloud_rev=text("cloudRev"),
            cloud_hash=text("cloudHash"),
        )


class ConflictBook:
    """The conflict records of one scope (``<base folder>/conflicts/<id>.json``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, note_id: str) -> Path:
        return self.folder / f"{check_id(note_id)}.json"

    def ids(self) -> set[str]:
        """Ids of notes with an open conflict."""
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return set()
        return {name[: -len(".json")] for name in names if name.endswith(".json")}

    def records(self) -> list[ConflictRecord]:
        """Every open conflict, oldest first."""
        found = []
        for note_id in self.ids():
            try:
                found.append(self.get(note_id))
            except (NotFoundError, ValidationError):
                continue
        return sorted(found, key=lambda record: (record.created_at, record.id))

    def get(self, note_id: str) -> ConflictRecord:
        """One record, or :class:`NotFoundError` naming how to list them."""
        try:
            data = json.loads(self._path(note_id).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise NotFoundError(
                f"no open conflict for {note_id!r}; 'oharness sync conflicts' lists them",
                id=note_id,
            ) from exc
        return ConflictRecord.from_json(data)

    def put(self, record: ConflictRecord) -> None:
        """Record (or refresh) a conflict."""
        make_directory(self.folder)
        data = json.dumps(record.to_json(), ensure_ascii=False, indent=1).encode("utf-8")
        atomic_write(self._path(record.id), data)

    def remove(self, note_id: str) -> None:
        """Close a conflict."""
        remove_file(self._path(note_id))
