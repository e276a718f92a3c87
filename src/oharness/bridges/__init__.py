"""Bridges to other agents: an MCP server, Claude Code hooks, and their configuration."""
