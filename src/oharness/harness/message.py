"""Messages of a conversation, as the harness keeps them (spec 09.2).

A user message keeps the person's own words as its ``text``; what plugins attach to it (the
memory plugin's ``<recalled-memory>`` block) lives in separate :class:`Attachment` values with
their own metadata. Providers turn these into their wire formats; transcripts store them as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("user", "assistant", "tool")


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run a tool. ``arguments`` is ``None`` when they were not JSON."""

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.arguments is None:
            data["rawArguments"] = self.raw_arguments
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolCall:
        arguments = data.get("arguments")
        return cls(
            id=str(data["id"]),
            name=str(data["name"]),
            arguments=dict(arguments) if isinstance(arguments, Mapping) else None,
            raw_arguments=str(data.get("rawArguments", "")),
        )

    def arguments_text(self) -> str:
        """The arguments as the JSON text a provider sends back."""
        if self.arguments is None:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class Attachment:
    """A block a plugin attached to a user message, kept apart from the user's words."""

    plugin: str
    kind: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "kind": self.kind,
            "text": self.text,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attachment:
        metadata = data.get("metadata")
        return cls(
            plugin=str(data["plugin"]),
            kind=str(data["kind"]),
            text=str(data["text"]),
            metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
        )


@dataclass(frozen=True)
class Message:
    """One message: user words (+ attachments), an assistant turn, or a tool result."""

    id: str
    role: Role
    text: str
    attachments: tuple[Attachment, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: int = 0

    def with_metadata(self, **values: Any) -> Message:
        """A copy with these metadata keys set."""
        return replace(self, metadata={**self.metadata, **values})

    def attachments_of(self, plugin: str, kind: str | None = None) -> list[Attachment]:
        """The attachments a plugin added (optionally of one kind)."""
        return [
            item
            for item in self.attachments
            if item.plugin == plugin and (kind is None or item.kind == kind)
        ]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "role": self.role, "text": self.text}
        if self.attachments:
            data["attachments"] = [item.to_json() for item in self.attachments]
        if self.tool_calls:
            data["toolCalls"] = [call.to_json() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["toolCallId"] = self.tool_call_id
        if self.tool_name is not None:
            data["toolName"] = self.tool_name
        if self.is_error:
            data["isError"] = True
        data["metadata"] = dict(self.metadata)
        data["createdAt"] = self.created_at
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Message:
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"unknown message role {role!r}")
        metadata = data.get("metadata")
        return cls(
            id=str(data["id"]),
            role=role,
            text=str(data.get("text", "")),
            attachments=tuple(Attachment.from_json(a) for a in data.get("attachments", ())),
            tool_calls=tuple(ToolCall.from_json(c) for c in data.get("toolCalls", ())),
            tool_call_id=data.get("toolCallId"),
            tool_name=data.get("toolName"),
            is_error=bool(data.get("isError", False)),
            metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
            created_at=int(data.get("createdAt", 0)),
        )


def transcript_chars(messages: list[Message]) -> int:
    """A rough size of a conversation (what compaction thresholds measure)."""
    total = 0
    for message in messages:
        total += len(message.text) + sum(len(item.text) for item in message.attachments)
        total += sum(len(call.arguments_text()) for call in message.tool_calls)
    return total
