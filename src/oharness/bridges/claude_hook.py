"""Claude Code hooks, the library side: recall and the index in this process (no daemon).

Contract followed: the Claude Code hooks reference as of late 2026 (Claude Code 2.1.x). A
command hook gets one JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, plus ``prompt`` for UserPromptSubmit and ``source`` —
``startup|resume|clear|compact`` — for SessionStart). On exit 0, a JSON object on stdout with
``hookSpecificOutput: {hookEventName, additionalContext}`` adds ``additionalContext`` to the
model's context. Printing nothing adds nothing; any failure here prints nothing and exits 0.

The per-prompt path (daemon first, the session record) is :mod:`oharness.bridges.prompt_hook`,
which falls back on :mod:`oharness.bridges.library_recall` when no daemon answers; this module
adds the session start (the Memory index) and re-exports the per-prompt names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from oharness.bridges.first_use import pull_on_first_use
from oharness.bridges.prompt_hook import (
    MAX_SESSIONS,
    HookState,
    handle_prompt,
    hook_fields,
    hook_output,
)

__all__ = ["MAX_SESSIONS", "HookState", "handle_prompt", "handle_session_start"]


def library_index(home: str, start: str, *, second_clone: bool = False) -> str:
    """The Memory section (guidance and one line per note) for the project at ``start``; with
    sync conflicts waiting and a daemon running, the Memory page's link to them too, unless
    ``second_clone`` (the daemon hosts another folder of the project, and the page shows that
    folder's conflicts: the command that shows this one's is said instead)."""
    from oharness.memory.workspace import open_workspace

    workspace = open_workspace(Path(start), Path(home), register=False)
    try:
        index = workspace.memory_index()
        if not workspace.service.waiting_conflicts():
            return index
        if second_clone:
            return (
                f"{index}\nThis folder is a second clone of the project on this machine, and "
                "the Memory page shows the conflicts of the other one: here, 'oharness sync "
                "conflicts' run in this folder lists them."
            )
        project = workspace.project
        identity = project.identity if project is not None else None
        link = conflicts_page(Path(home), identity.id if identity is not None else None)
        if link is None:
            return index
        return f"{index}\nThe Memory page shows each conflict's versions side by side: {link}"
    finally:
        workspace.close()


def conflicts_page(home: Path, project_id: str | None) -> str | None:
    """The Memory page's Conflicts section of the daemon running for ``home`` (None: none)."""
    try:
        info = json.loads((home / "daemon.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    url = info.get("url") if isinstance(info, dict) else None
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    query = f"?{urlencode({'workspace': project_id})}" if project_id else ""
    return f"{url.rstrip('/')}/memory/conflicts{query}"


def handle_session_start(
    payload: Mapping[str, Any], home: str, log: Callable[[str], None] = lambda reason: None
) -> str:
    """SessionStart: the Memory index; after ``/clear`` or compaction, notes may attach again."""
    source = payload.get("source") if isinstance(payload, dict) else None
    _, session_id, start = hook_fields(payload, None)
    if session_id and source in ("clear", "compact"):
        HookState(home).forget_session(session_id)
    second_clone = pull_on_first_use(home, start, log)
    return hook_output("SessionStart", library_index(home, start, second_clone=second_clone))
