"""The memory tools (spec 02.1) as a library API: remember, memory, forget, plus restore/edit.

Public entry points:
- :func:`oharness.tools.workspace.open_workspace` builds stores, backups and the service for a
  project directory and an ``OHARNESS_HOME``;
- :class:`oharness.tools.service.MemoryService` is the API (``remember``, ``read``,
  ``listing``, ``forget``, ``restore``, ``apply_edit``);
- :mod:`oharness.tools.definitions` exports the JSON-schema tool definitions (OpenAI and
  Anthropic function calling) and dispatches a model's tool call to the service.
"""
