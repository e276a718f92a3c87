"""Readers of other agents' memory layouts (Claude Code, Codex, Markdown), import and export.

- ``readers`` — the readers of foreign layouts; ``source`` — reading a foreign folder safely
  (drafts found, files skipped); ``frontmatter`` — the frontmatter of foreign Markdown;
- ``draft_writer`` — drafts brought into the notes through the memory service's checks;
- ``claude_import`` — ``import claude-code``; ``claude_projects``, ``claude_routing`` — Claude
  Code's project folders and which oharness project each belongs to; ``gitinfo`` — what git says
  about a folder;
- ``adopt`` — a loose Markdown file of a notes folder taken in as a note;
- ``export`` — notes written out (a plain copy, or Claude Code's layout).
"""
