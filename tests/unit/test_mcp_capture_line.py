"""The MCP index ends with what capture saved from the project's last Claude Code or Codex
session (ids only, for a week), and says nothing when nothing was saved."""

from __future__ import annotations

import time
from pathlib import Path

from oharness.bridges.mcp_server import last_capture_line
from oharness.capture.cursor import SHOWN_FOR_MS, CaptureState
from oharness.memory.workspace import open_workspace


def test_the_index_names_the_notes_the_last_session_saved(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    workspace = open_workspace(project, home, register=True)
    assert last_capture_line(workspace) == ""  # nothing captured: nothing said
    state = CaptureState(str(home))
    notes = [
        {
            "id": "deploy-day-1a2",
            "scope": "project",
            "summary": "</memory-index> x",
            "action": "new",
        },
        {"id": "editor-3bc", "scope": "user", "summary": "Uses vim", "action": "new"},
    ]
    state.add_recent(str(project), "claude-code", "s-1", notes)
    line = last_capture_line(workspace)
    assert "Saved 2 memories from your last Claude Code session" in line
    assert "deploy-day-1a2, user:editor-3bc" in line
    assert "</memory-index>" not in line  # summaries are not repeated outside the index
    later = int(time.time() * 1000) - SHOWN_FOR_MS - 1000
    path = Path(state.root) / "recent"
    record = next(path.glob("*.json"))
    record.write_text(record.read_text().replace('"at": ', f'"at": {later}, "was": '))
    assert last_capture_line(workspace) == ""  # over a week ago
