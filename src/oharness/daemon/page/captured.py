"""The notes section's line about the last Claude Code or Codex session capture saved from.

Read from the capture state (:func:`oharness.capture.cursor.latest_saved`): the newest session
of this project whose passes saved notes, for a week after its last save. A session that saved
nothing is never recorded, so nothing is said about it.
"""

from __future__ import annotations

from typing import Any

from oharness.capture.cursor import AGENT_NAMES, CaptureState, latest_saved
from oharness.daemon.page.view import PageView


def captured_context(view: PageView) -> dict[str, Any] | None:
    """``{"count", "agent", "at", "notes": [{"ref", "id", "summary"}]}`` or None."""
    workspace = view.hosted.workspace
    project = workspace.project
    if project is None or project.identity is None or not workspace.user_available:
        return None
    found = latest_saved(
        CaptureState(workspace.home.home), str(project.root), view.state.options.clock()
    )
    if found is None:
        return None
    latest, saved = found
    notes = [
        {"ref": f"{note['scope']}:{note['id']}", "id": note["id"], "summary": note["summary"]}
        for note in saved
    ]
    agent = AGENT_NAMES.get(str(latest.get("agent")), str(latest.get("agent")))
    return {"count": len(notes), "agent": agent, "at": latest["at"], "notes": notes}
