"""Transcripts on disk: one JSON object per line (spec 09.2).

``$OHARNESS_HOME/sessions/<projectId or 'none'>/<sessionId>.jsonl``. The first line describes
the session; then, in order:

- ``{"type": "message", "message": {...}}`` — a message with its metadata (see
  :class:`~oharness.harness.message.Message`; a user message's ``text`` is the user's words,
  attachments such as recalled memory are separate, with their metadata);
- ``{"type": "compaction", "replaced": [message ids], "summary": {message}, "reason", "at"}`` —
  the replaced messages leave the live conversation and the summary takes the place of the
  first of them;
- ``{"type": "metadata", "key": "...", "value": ..., "at"}`` — session metadata kept by plugins
  (the extraction cursor, for one); the last record of a key wins.

Lines are appended (one ``write`` each, flushed and fsynced); a torn last line from a crash is
skipped when reading.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from oharness.errors import ConflictError, NotFoundError, StorageError, ValidationError
from oharness.fsio import make_directory, private_mode
from oharness.harness.message import Message

log = logging.getLogger(__name__)

FORMAT_VERSION: Final = 1
NO_PROJECT: Final = "none"
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def check_session_id(session_id: str) -> str:
    """A session id safe to use as a file name, or a clear error."""
    if not _SESSION_ID.match(session_id) or ".." in session_id:
        raise ValidationError(
            f"{session_id!r} is not a session id (letters, digits, '-', '_' and '.')",
            field="session",
        )
    return session_id


@dataclass(frozen=True)
class SessionHeader:
    """The first line of a transcript."""

    id: str
    project_id: str | None
    created_at: int
    subagent: bool = False
    parent_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "session",
            "version": FORMAT_VERSION,
            "id": self.id,
            "projectId": self.project_id,
            "createdAt": self.created_at,
            "subagent": self.subagent,
            "parentId": self.parent_id,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionHeader:
        return cls(
            id=str(data["id"]),
            project_id=data.get("projectId"),
            created_at=int(data.get("createdAt", 0)),
            subagent=bool(data.get("subagent", False)),
            parent_id=data.get("parentId"),
        )


@dataclass
class LoadedTranscript:
    """What a transcript holds once its compactions are applied."""

    header: SessionHeader
    messages: list[Message]
    path: Path
    compactions: int = 0
    last_sequence: int = 0
    skipped_lines: list[int] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


def message_sequence(message_id: str) -> int:
    """The number in an ``m<n>`` message id (0 for other ids)."""
    digits = message_id[1:]
    return int(digits) if message_id.startswith("m") and digits.isdigit() else 0


def apply_compaction(
    messages: list[Message], replaced: list[str], summary: Message
) -> list[Message]:
    """The conversation after a compaction: the summary where the first replaced message was."""
    gone = set(replaced)
    result: list[Message] = []
    placed = False
    for message in messages:
        if message.id in gone:
            if not placed:
                result.append(summary)
                placed = True
            continue
        result.append(message)
    if not placed:
        result.insert(0, summary)
    return result


class TranscriptStore:
    """The sessions folder of one ``OHARNESS_HOME``."""

    def __init__(self, sessions_dir: Path) -> None:
        self.directory = sessions_dir

    def path_for(self, project_id: str | None, session_id: str) -> Path:
        folder = project_id or NO_PROJECT
        return self.directory / folder / f"{check_session_id(session_id)}.jsonl"

    def create(self, header: SessionHeader) -> Path:
        """Start a transcript (refuses an id already used)."""
        path = self.path_for(header.project_id, header.id)
        try:
            make_directory(path.parent)
            created = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, private_mode(path))
            with open(created, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(header.to_json(), ensure_ascii=False) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        except FileExistsError as exc:
            raise ConflictError(f"session {header.id} exists already", session=header.id) from exc
        except OSError as exc:
            raise StorageError(
                f"cannot write the transcript {path} ({exc.strerror or exc}); check that "
                "OHARNESS_HOME is writable",
                path=str(path),
            ) from exc
        return path

    def append(self, path: Path, record: Mapping[str, Any]) -> None:
        """Append one record as one line."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            appended = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, private_mode(path))
            with open(appended, "ab+") as handle:
                if handle.seek(0, os.SEEK_END) > 0:
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":  # a torn last line: never glue a record to it
                        line = "\n" + line
                handle.write(line.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise StorageError(
                f"cannot append to the transcript {path} ({exc.strerror or exc})", path=str(path)
            ) from exc

    def find(self, session_id: str, project_id: str | None) -> Path:
        """The transcript of a session: this project's folder first, then any other."""
        own = self.path_for(project_id, session_id)
        if own.is_file():
            return own
        for candidate in sorted(self.directory.glob(f"*/{check_session_id(session_id)}.jsonl")):
            return candidate
        raise NotFoundError(
            f"no session {session_id!r} under {self.directory}; 'oharness chat' prints the id "
            "to resume when a session ends",
            session=session_id,
        )

    def load(self, path: Path) -> LoadedTranscript:
        """Read a transcript, applying its compactions."""
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise StorageError(f"cannot read {path} ({exc.strerror or exc})") from exc
        records: list[tuple[int, dict[str, Any]]] = []
        skipped: list[int] = []
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
            except ValueError:
                skipped.append(number)
                continue
            if isinstance(record, dict):
                records.append((number, record))
        if skipped:
            log.warning("%s: skipped unreadable lines %s", path, skipped)
        if not records or records[0][1].get("type") != "session":
            raise StorageError(f"{path} is not a transcript (no session line first)")
        loaded = LoadedTranscript(SessionHeader.from_json(records[0][1]), [], path)
        loaded.skipped_lines = skipped
        for number, record in records[1:]:
            try:
                self._apply(loaded, record)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("%s: line %d skipped (%s)", path, number, exc)
                loaded.skipped_lines.append(number)
        return loaded

    @staticmethod
    def _apply(loaded: LoadedTranscript, record: Mapping[str, Any]) -> None:
        kind = record.get("type")
        if kind == "message":
            message = Message.from_json(record["message"])
            loaded.messages.append(message)
            loaded.last_sequence = max(loaded.last_sequence, message_sequence(message.id))
        elif kind == "compaction":
            summary = Message.from_json(record["summary"])
            replaced = [str(item) for item in record["replaced"]]
            loaded.messages = apply_compaction(loaded.messages, replaced, summary)
            loaded.last_sequence = max(loaded.last_sequence, message_sequence(summary.id))
            loaded.compactions += 1
        elif kind == "metadata":
            loaded.metadata[str(record["key"])] = record["value"]

    def list_sessions(self, project_id: str | None) -> list[SessionHeader]:
        """The sessions of a project, newest first."""
        folder = self.directory / (project_id or NO_PROJECT)
        headers = []
        for path in folder.glob("*.jsonl"):
            try:
                with open(path, encoding="utf-8") as handle:
                    first = json.loads(handle.readline())
                headers.append(SessionHeader.from_json(first))
            except (OSError, ValueError, KeyError):
                continue
        return sorted(headers, key=lambda header: (-header.created_at, header.id))
