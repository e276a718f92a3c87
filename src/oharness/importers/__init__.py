"""Readers of other agents' memory layouts (Claude Code, Codex, Markdown), import, export."""
