"""A session: an id, a project, a conversation, and its transcript on disk (spec 09.2)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oharness.harness.message import Message
from oharness.harness.transcript import (
    LoadedTranscript,
    SessionHeader,
    TranscriptStore,
    apply_compaction,
)
from oharness.types import Clock, HexSource


def new_session_id(clock: Clock, hex_source: HexSource) -> str:
    """``YYYYMMDD-HHMMSS-<6 hex>`` (UTC): sortable by start, unique enough to never collide."""
    stamp = datetime.fromtimestamp(clock() / 1000, tz=UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{hex_source(6)}"


class Session:
    """One conversation. Plugins read it; the harness appends to it (and to its transcript)."""

    def __init__(
        self,
        header: SessionHeader,
        messages: list[Message] | None = None,
        *,
        clock: Clock,
        store: TranscriptStore | None = None,
        path: Path | None = None,
        last_sequence: int = 0,
        resumed: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.header = header
        self._messages = list(messages or [])
        self._clock = clock
        self._store = store
        self.path = path
        self._sequence = last_sequence
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # background plugins write metadata too
        self.resumed = resumed
        self._metadata = dict(metadata or {})

    @classmethod
    def from_transcript(
        cls, loaded: LoadedTranscript, *, clock: Clock, store: TranscriptStore
    ) -> Session:
        """A session continuing a transcript read from disk."""
        return cls(
            loaded.header,
            loaded.messages,
            clock=clock,
            store=store,
            path=loaded.path,
            last_sequence=loaded.last_sequence,
            resumed=True,
            metadata=loaded.metadata,
        )

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def project_id(self) -> str | None:
        return self.header.project_id

    @property
    def subagent(self) -> bool:
        """Subagent sessions neither recall nor extract."""
        return self.header.subagent

    @property
    def parent_id(self) -> str | None:
        return self.header.parent_id

    @property
    def messages(self) -> tuple[Message, ...]:
        """The live conversation (compacted stretches replaced by their summaries)."""
        with self._lock:
            return tuple(self._messages)

    @property
    def title(self) -> str:
        """The first user message's own words (never an attachment), shortened."""
        for message in self.messages:
            if message.role == "user" and not message.metadata.get("summary"):
                line = message.text.strip().splitlines()[0] if message.text.strip() else ""
                return line if len(line) <= 80 else line[:79] + "…"
        return ""

    def metadata(self, key: str) -> Any:
        """A session metadata value (None when never set)."""
        with self._lock:
            return self._metadata.get(key)

    def set_metadata(self, key: str, value: Any) -> None:
        """Set a session metadata value (JSON), kept in the transcript."""
        with self._lock:
            self._metadata[key] = value
        self._write({"type": "metadata", "key": key, "value": value, "at": self._clock()})

    def _write(self, record: Mapping[str, Any]) -> None:
        if self._store is not None and self.path is not None:
            with self._write_lock:
                self._store.append(self.path, record)

    def next_message_id(self) -> str:
        """A fresh ``m<n>`` id."""
        with self._lock:
            self._sequence += 1
            return f"m{self._sequence}"

    def now(self) -> int:
        return self._clock()

    def append(self, message: Message) -> Message:
        """Add a message to the conversation and the transcript."""
        with self._lock:
            self._messages.append(message)
        self._write({"type": "message", "message": message.to_json()})
        return message

    def compact(self, replaced: list[Message], summary: Message, reason: str) -> None:
        """Replace ``replaced`` by ``summary`` in the conversation and the transcript."""
        ids = [message.id for message in replaced]
        with self._lock:
            self._messages = apply_compaction(self._messages, ids, summary)
        self._write(
            {
                "type": "compaction",
                "at": self._clock(),
                "reason": reason,
                "replaced": ids,
                "summary": summary.to_json(),
            }
        )
