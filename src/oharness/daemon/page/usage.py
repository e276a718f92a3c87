"""What recall used, for the page: counts per note and recalls per day (``memory-usage/``)."""

from __future__ import annotations

from oharness.recall.score import Usage
from oharness.tools.usage import UsageLog
from oharness.tools.workspace import Workspace
from oharness.types import Scope

NoteKey = tuple[Scope, str]


def _log(workspace: Workspace) -> tuple[UsageLog, dict[Scope, str]]:
    service = workspace.service
    keys = {scope: service.scope_key(scope) for scope in service.available_scopes()}
    return UsageLog(workspace.home.usage_dir, clock=lambda: 0), keys


def usage_counts(workspace: Workspace) -> dict[NoteKey, Usage]:
    """How often, and when last, each note was recalled on this machine."""
    log, keys = _log(workspace)
    return log.load(keys)


def usage_history(workspace: Workspace) -> dict[NoteKey, dict[int, int]]:
    """Recalls per UTC day number of each note (the last 90 days)."""
    log, keys = _log(workspace)
    return log.history(keys)
