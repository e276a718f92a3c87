"""What recall used, for the page: counts per note and recalls per day (``memory-usage/``)."""

from __future__ import annotations

from pathlib import Path

from oharness.recall.score import Usage
from oharness.tools.usage import UsageLog
from oharness.tools.workspace import Workspace
from oharness.types import Scope

NoteKey = tuple[Scope, str]


_LOGS: dict[Path, UsageLog] = {}


def _log(workspace: Workspace) -> tuple[UsageLog, dict[Scope, str]]:
    service = workspace.service
    keys = {scope: service.scope_key(scope) for scope in service.available_scopes()}
    directory = workspace.home.usage_dir
    log = _LOGS.get(directory)
    if log is None:  # one per folder: it parses a file again only when the file changed
        log = _LOGS.setdefault(directory, UsageLog(directory, clock=lambda: 0))
    return log, keys


def usage_counts(workspace: Workspace) -> dict[NoteKey, Usage]:
    """How often, and when last, each note was recalled on this machine."""
    log, keys = _log(workspace)
    return log.load(keys)


def usage_history(workspace: Workspace) -> dict[NoteKey, dict[int, int]]:
    """Recalls per UTC day number of each note (the last 90 days)."""
    log, keys = _log(workspace)
    return log.history(keys)
