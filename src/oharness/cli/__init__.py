"""The ``oharness`` command line: a thin shell over the library, one module per command group.

- ``entry`` — the console script (hooks and the MCP server take a short path); ``main`` — the
  click group and its lazily imported commands (``lazy``); ``error_policy`` — one line on
  stderr and an exit code for every failure; ``context`` — what every command shares (home,
  project, output);
- commands: ``memory`` (the memory tools; ``review`` for review and merge, ``transfer`` for
  import and export, ``extract`` with ``extract_run``), ``project``, ``sync`` (login, logout,
  sync), ``sync_server``, ``chat`` (with ``chat_run``), ``serve``, ``demo``, ``mcp`` (with
  ``mcp_relay``: the session through the daemon), ``integrate``, ``doctor``, ``setup`` (with
  ``setup_steps``, ``setup_capture``, ``installation``, ``user_service``), ``hook`` (with
  ``capture_run``; ``hook_log``, the hook log both write to).
"""
