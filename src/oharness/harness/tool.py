"""Tools a plugin registers: name, description, JSON-schema input, handler, permission class."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from oharness.harness.model import ToolSpec
from oharness.harness.permission import PermissionClass
from oharness.harness.session import Session

#: Publishes an event of a run (kind, data) to whoever watches it (the CLI, the daemon).
Emit = Callable[[str, Mapping[str, Any]], None]


@dataclass(frozen=True)
class ToolContext:
    """What a tool handler knows about the call."""

    session: Session
    call_id: str
    emit: Emit


#: Runs a call: returns a JSON-ready result (``{"error": {...}}`` for a refusal) or text.
ToolHandler = Callable[[Mapping[str, Any], ToolContext], Mapping[str, Any] | str]


@dataclass(frozen=True)
class Tool:
    """A tool. ``exempt_from_asking`` only takes effect for registrations the host trusts."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: ToolHandler
    permission: PermissionClass = "read"
    always_ask: bool = False
    exempt_from_asking: bool = False

    def spec(self) -> ToolSpec:
        """The definition a model sees."""
        return ToolSpec(self.name, self.description, self.input_schema)


@dataclass(frozen=True, eq=False)
class PluginRegistration:
    """The host's handle for one installed plugin (identity, not name, carries trust)."""

    plugin_id: str
    trusted: bool = False
    source: str = "builtin"
    _token: object = field(default_factory=object, repr=False)


@dataclass(frozen=True)
class RegisteredTool:
    """A tool as installed: which registration it came through."""

    tool: Tool
    registration: PluginRegistration

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def exempt(self) -> bool:
        """Runs without asking (except in plan mode and under ask/deny rules)."""
        return self.tool.exempt_from_asking and self.registration.trusted
