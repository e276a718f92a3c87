"""Bridges to other agents: an MCP server, Claude Code and Codex hooks, their configuration.

- ``mcp_server`` — the memory tools as an MCP server over stdio;
- ``prompt_hook`` — the per-prompt hook (``UserPromptSubmit``): ask the daemon, else the library;
- ``library_recall`` — recall in the hook's own process, when no daemon answers;
- ``claude_hook`` — the library side of the Claude Code hooks: session start and the index;
- ``capture_hook`` — the capture hooks (stop, pre-compact, session end);
- ``integrate`` — ``oharness integrate``: our MCP server and hooks in another agent's config.
"""
