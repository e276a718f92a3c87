"""The harness that hosts memory: plugin host, sessions, permissions, models (spec 09).

Public API (see docs/harness.md):

- :func:`create_harness` / :class:`HarnessOptions` / :class:`Harness` — the agent loop;
- :class:`Plugin`, :class:`PluginApi`, :class:`Tool`, :class:`MessageBlock`,
  :class:`PageDescriptor`, :class:`PageSection` — writing plugins;
- :class:`AgentMemory`, :class:`AgentOptions` — recall for your own agent loop, no plugin host;
- :class:`ChatModel`, :class:`ModelRequest`, :class:`ModelReply`, :class:`ScriptedModel`,
  :func:`configured_models`, :class:`ProviderEnvironment` — models;
- :data:`PermissionMode`, :class:`PermissionRules`, :class:`ApprovalRequest`,
  :func:`headless_approver` — permissions.

Modules: ``harness`` (the loop), ``plugin``, ``plugin_host``, ``plugin_config``, ``tool``,
``permission``, ``tool_runner`` (tool calls through the permission rules), ``session``, ``message``,
``transcript``, ``compaction``; models: ``model``, ``providers``, ``openai_provider``,
``anthropic_provider``, ``http_call``, ``transport``, ``scripted``; memory: ``memory_plugin``,
``agent_memory``, ``memory_sync``, ``consolidation``, ``extraction_trigger``; ``config``.
"""

from oharness.harness.agent_memory import AgentMemory, AgentOptions, UserTurn
from oharness.harness.harness import CompactionResult, Harness, HarnessOptions, create_harness
from oharness.harness.memory_plugin import MemoryPlugin, MemoryPluginOptions
from oharness.harness.message import Attachment, Message, ToolCall
from oharness.harness.model import (
    CancelToken,
    ChatModel,
    ModelCancelled,
    ModelError,
    ModelReply,
    ModelRequest,
    ToolSpec,
)
from oharness.harness.permission import (
    PERMISSION_MODES,
    ApprovalRequest,
    Approver,
    PermissionMode,
    PermissionRules,
    headless_approver,
)
from oharness.harness.plugin import (
    BackgroundService,
    HarnessEnvironment,
    MessageBlock,
    PageDescriptor,
    PageSection,
    Plugin,
    PluginApi,
)
from oharness.harness.plugin_host import RunEvent
from oharness.harness.providers import (
    Models,
    ProviderEnvironment,
    configured_models,
    create_model,
    parse_model_spec,
)
from oharness.harness.scripted import ScriptedModel, text_reply, tool_reply
from oharness.harness.session import Session
from oharness.harness.tool import Tool, ToolContext
from oharness.harness.tool_runner import RunResult, ToolOutcome

__all__ = [
    "PERMISSION_MODES",
    "AgentMemory",
    "AgentOptions",
    "ApprovalRequest",
    "Approver",
    "Attachment",
    "BackgroundService",
    "CancelToken",
    "ChatModel",
    "CompactionResult",
    "Harness",
    "HarnessEnvironment",
    "HarnessOptions",
    "MemoryPlugin",
    "MemoryPluginOptions",
    "Message",
    "MessageBlock",
    "ModelCancelled",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "Models",
    "PageDescriptor",
    "PageSection",
    "PermissionMode",
    "PermissionRules",
    "Plugin",
    "PluginApi",
    "ProviderEnvironment",
    "RunEvent",
    "RunResult",
    "ScriptedModel",
    "Session",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolOutcome",
    "ToolSpec",
    "UserTurn",
    "configured_models",
    "create_harness",
    "create_model",
    "headless_approver",
    "parse_model_spec",
    "text_reply",
    "tool_reply",
]
