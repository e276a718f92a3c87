"""Memory: the library's front door — a project's workspace, its memory service, the model tools.

Start here: :func:`~oharness.memory.workspace.open_workspace` opens a project's memory (its
stores, backups, settings and service) for a project folder and an ``OHARNESS_HOME``; its
``service`` is a :class:`~oharness.memory.memory_service.MemoryService` (``remember``, ``read``,
``listing``, ``search``, ``forget``, ``restore``, ``apply_edit``, over both scopes).

- ``workspace`` — opening the memory of a project folder (spec 01.3–01.8);
- ``memory_service`` — the memory service: remember, read, list, forget, restore, edit;
- ``tools`` — the three memory tools as JSON-schema definitions (neutral, OpenAI, Anthropic)
  and the dispatcher of a model's tool call (spec 02.1);
- ``results`` — the tools' structured results and their JSON shapes;
- ``prompt`` — the Memory section of the system prompt (spec 03.1);
- ``scope_recall`` — the recall index kept in step with both scopes' stores (spec 03);
- ``attach`` — the ``<recalled-memory>`` block attached to a user message (spec 03.2);
- ``usage`` — per-machine recall counts;
- ``note_filter`` — which notes a listing or a search keeps (scope, type, tag);
- ``backup_list`` — the backups a workspace can restore, and which restores need a yes;
- ``conflict_marks`` — notes with a sync conflict waiting, as every reader marks them;
- ``doctor`` — the health report of the notes folders (``oharness memory doctor``).
"""
