"""Memory for an agent loop you run yourself: recall without any plugin host (spec 09.1).

:class:`AgentMemory` is one conversation's view of the memory: the Memory section for the
system prompt, per-message recall that never attaches a note twice while a message carrying
it is still in the conversation, the three tools, and releasing notes when messages are
compacted away. :class:`AgentOptions` bundles it (``memory=``) with the subagent flag. The
built-in memory plugin is built on these same pieces.

    memory = AgentMemory.from_workspace(open_workspace(Path.cwd(), home, register=True))
    options = AgentOptions(memory=memory)
    system = options.system_prompt("You are a helpful agent.")
    turn = options.user_turn("How do we deploy?")
    messages.append({"role": "user", "content": turn.openai_content()})
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oharness.memory.attach import AttachedNote, RecallOutcome, recall_for_message
from oharness.memory.memory_service import MemoryService
from oharness.memory.prompt import render_index
from oharness.memory.scope_recall import NoteKey
from oharness.memory.tools import anthropic_tools, call_tool, openai_tools
from oharness.memory.workspace import Workspace
from oharness.types import SCOPES

RECALLED_KIND: Final = "recalled-memory"


def recall_metadata(outcome: RecallOutcome) -> dict[str, Any]:
    """What a message records about the notes attached to it."""
    return {
        "recalled": [note.to_dict() for note in outcome.attached],
        "linked": list(outcome.linked),
    }


def recalled_keys(metadata: Mapping[str, Any]) -> list[NoteKey]:
    """The note keys recorded by :func:`recall_metadata` (unreadable entries skipped)."""
    keys: list[NoteKey] = []
    for item in metadata.get("recalled", ()) if isinstance(metadata, Mapping) else ():
        if not isinstance(item, Mapping):
            continue
        scope, note_id = item.get("scope"), item.get("id")
        for known in SCOPES:
            if scope == known and isinstance(note_id, str):
                keys.append((known, note_id))
    return keys


class AgentMemory:
    """The memory as one conversation sees it."""

    def __init__(self, service: MemoryService, *, index_chars: int = 4000) -> None:
        self.service = service
        self.index_chars = index_chars
        self._carriers: dict[str, set[NoteKey]] = {}
        self._auto_ids = itertools.count(1)

    @classmethod
    def from_workspace(cls, workspace: Workspace) -> AgentMemory:
        """Memory of an opened workspace (project and user scopes)."""
        return cls(workspace.service, index_chars=workspace.settings.memory.index_chars)

    def system_section(self) -> str:
        """The Memory section of the system prompt, rendered now."""
        service = self.service
        return render_index(
            service.all_notes(),
            self.index_chars,
            service.waiting_conflicts(),
            service.available_scopes(),
        )

    @property
    def carried(self) -> frozenset[NoteKey]:
        """Notes attached to messages still in the conversation (never attached again)."""
        return frozenset(key for keys in self._carriers.values() for key in keys)

    def recall(self, message: str, *, message_id: str | None = None) -> RecallOutcome:
        """The block to attach to a user message (empty when nothing passes); never raises."""
        if self.service.recall is None:
            return RecallOutcome()
        outcome = recall_for_message(self.service.recall, message, self.carried)
        if outcome.attached:
            carrier = message_id or f"turn-{next(self._auto_ids)}"
            self.carry(carrier, [(note.scope, note.id) for note in outcome.attached])
        return outcome

    def carry(self, message_id: str, keys: Iterable[NoteKey]) -> None:
        """Record that a message carries these notes."""
        self._carriers.setdefault(message_id, set()).update(keys)

    def release(self, message_ids: Iterable[str]) -> set[NoteKey]:
        """Messages left the conversation (compaction): their notes may be attached again."""
        before = self.carried
        for message_id in message_ids:
            self._carriers.pop(message_id, None)
        return set(before - self.carried)

    def reload(self, messages: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Rebuild what is carried from ``(message id, recall metadata)`` pairs (resume)."""
        self._carriers.clear()
        for message_id, metadata in messages:
            keys = recalled_keys(metadata)
            if keys:
                self.carry(message_id, keys)

    def openai_tools(self) -> list[dict[str, Any]]:
        return openai_tools()

    def anthropic_tools(self) -> list[dict[str, Any]]:
        return anthropic_tools()

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``remember``, ``memory`` or ``forget``; refusals come back as ``{"error"}``.

        Asking a person before ``forget`` is the caller's job (it always asks, 02.3).
        """
        return call_tool(self.service, name, arguments)


@dataclass(frozen=True)
class UserTurn:
    """A user message ready to send: the words, and the recalled block kept apart."""

    text: str
    block: str = ""
    attached: tuple[AttachedNote, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def openai_content(self) -> str | list[dict[str, Any]]:
        """Chat-completions ``content``: the words, then the block as a second text part."""
        if not self.block:
            return self.text
        return [{"type": "text", "text": self.text}, {"type": "text", "text": self.block}]

    def anthropic_content(self) -> list[dict[str, Any]]:
        """Messages ``content`` blocks: the words, then the block."""
        return [{"type": "text", "text": part} for part in (self.text, self.block) if part]


@dataclass(frozen=True)
class AgentOptions:
    """What an agent loop needs from oharness: ``memory`` (None: no memory at all)."""

    memory: AgentMemory | None = None
    subagent: bool = False

    def system_prompt(self, base: str) -> str:
        """``base`` followed by the Memory section."""
        if self.memory is None:
            return base
        return (
            f"{base.rstrip()}\n\n{self.memory.system_section()}"
            if base
            else (self.memory.system_section())
        )

    def user_turn(self, text: str, *, message_id: str | None = None) -> UserTurn:
        """Recall for a user message (subagents never recall)."""
        if self.memory is None or self.subagent:
            return UserTurn(text)
        outcome = self.memory.recall(text, message_id=message_id)
        if not outcome.block:
            return UserTurn(text)
        return UserTurn(text, outcome.block, outcome.attached, recall_metadata(outcome))
