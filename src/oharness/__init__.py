"""oharness: a local-first memory engine for AI agent harnesses.

The public API (docs/api.md): open a workspace, use its memory service or hand the tools to a
model, recall for your own agent loop, and the error tree. Every name is imported from its
defining module on first use, so ``import oharness`` stays cheap (a hook may run the CLI for
every message) and importing one part never loads the others.

    from pathlib import Path
    import oharness

    ws = oharness.open_workspace(Path.cwd(), Path.home() / ".oharness", register=True)
    ws.service.remember("Deploys happen on Tuesdays", "Release train at noon.", tags="release")
"""

from __future__ import annotations

from oharness.exports import lazy_exports

# Not typing.TYPE_CHECKING: importing typing would triple the cost of ``import oharness``
# (type checkers treat any name TYPE_CHECKING as true).
TYPE_CHECKING = False

__version__ = "0.1.0"

_ERRORS = (
    "OHarnessError",
    "ConfigError",
    "ConflictError",
    "LimitError",
    "NoteFormatError",
    "NotFoundError",
    "PathSafetyError",
    "ProjectError",
    "SecretError",
    "StorageError",
    "SyncError",
    "UnavailableError",
    "ValidationError",
)
_EXPORTS = {
    "open_workspace": "oharness.memory.workspace",
    "Workspace": "oharness.memory.workspace",
    "MemoryService": "oharness.memory.memory_service",
    "tool_definitions": "oharness.memory.tools",
    "openai_tools": "oharness.memory.tools",
    "anthropic_tools": "oharness.memory.tools",
    "call_tool": "oharness.memory.tools",
    "AgentMemory": "oharness.harness.agent_memory",
    "AgentOptions": "oharness.harness.agent_memory",
    **dict.fromkeys(_ERRORS, "oharness.errors"),
}

__all__ = [
    "AgentMemory",
    "AgentOptions",
    "ConfigError",
    "ConflictError",
    "LimitError",
    "MemoryService",
    "NotFoundError",
    "NoteFormatError",
    "OHarnessError",
    "PathSafetyError",
    "ProjectError",
    "SecretError",
    "StorageError",
    "SyncError",
    "UnavailableError",
    "ValidationError",
    "Workspace",
    "__version__",
    "anthropic_tools",
    "call_tool",
    "open_workspace",
    "openai_tools",
    "tool_definitions",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what the table above imports, for type checkers and editors
    from oharness.errors import (
        ConfigError,
        ConflictError,
        LimitError,
        NoteFormatError,
        NotFoundError,
        OHarnessError,
        PathSafetyError,
        ProjectError,
        SecretError,
        StorageError,
        SyncError,
        UnavailableError,
        ValidationError,
    )
    from oharness.harness.agent_memory import AgentMemory, AgentOptions
    from oharness.memory.memory_service import MemoryService
    from oharness.memory.tools import (
        anthropic_tools,
        call_tool,
        openai_tools,
        tool_definitions,
    )
    from oharness.memory.workspace import Workspace, open_workspace
