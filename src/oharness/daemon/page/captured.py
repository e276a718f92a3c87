"""The notes section's line about the last Claude Code or Codex session capture saved from.

Read from the capture state (:meth:`oharness.capture.cursor.CaptureState.recent`): the newest
session of this project whose passes saved notes, for a week after its last save. A session
that saved nothing is never recorded, so nothing is said about it.
"""

from __future__ import annotations

from typing import Any, Final

from oharness.capture.cursor import CaptureState
from oharness.daemon.page.view import PageView

SHOWN_FOR_MS: Final = 7 * 24 * 3600 * 1000
AGENT_NAMES: Final = {"claude-code": "Claude Code", "codex": "Codex"}


def captured_context(view: PageView) -> dict[str, Any] | None:
    """``{"count", "agent", "at", "notes": [{"ref", "id", "summary"}]}`` or None."""
    workspace = view.hosted.workspace
    project = workspace.project
    if project is None or project.identity is None or not workspace.user_available:
        return None
    sessions = CaptureState(workspace.home.home).recent(str(project.root))
    if not sessions:
        return None
    latest = sessions[0]
    at = latest.get("at")
    if not isinstance(at, int) or view.state.options.clock() - at > SHOWN_FOR_MS:
        return None
    saved = latest.get("notes")
    notes = [
        {
            "ref": f"{note['scope']}:{note['id']}",
            "id": note["id"],
            "summary": note["summary"],
        }
        for note in (saved if isinstance(saved, list) else [])
        if isinstance(note, dict)
        and all(isinstance(note.get(key), str) for key in ("id", "scope", "summary"))
    ]
    if not notes:
        return None
    agent = AGENT_NAMES.get(str(latest.get("agent")), str(latest.get("agent")))
    return {"count": len(notes), "agent": agent, "at": at, "notes": notes}
