"""Claude Code hooks, the library side: recall and the index in this process (no daemon).

Contract followed: the Claude Code hooks reference as of late 2026 (Claude Code 2.1.x). A
command hook gets one JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, plus ``prompt`` for UserPromptSubmit and ``source`` —
``startup|resume|clear|compact`` — for SessionStart). On exit 0, a JSON object on stdout with
``hookSpecificOutput: {hookEventName, additionalContext}`` adds ``additionalContext`` to the
model's context. Printing nothing adds nothing; any failure here prints nothing and exits 0.

The per-prompt path (daemon first, the session record) is :mod:`oharness.bridges.prompt_hook`,
which imports this module only when no daemon answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oharness.bridges.prompt_hook import (
    MAX_SESSIONS,
    HookState,
    handle_prompt,
    hook_fields,
    hook_output,
)

__all__ = ["MAX_SESSIONS", "HookState", "handle_prompt", "handle_session_start"]


def library_recall(home: str, start: str, message: str, exclude: list[str]) -> dict[str, Any]:
    """Recall in this process, through the library (no daemon)."""
    from oharness.tools.attach import recall_for_message
    from oharness.tools.workspace import open_workspace

    workspace = open_workspace(Path(start), Path(home), register=False)
    try:
        recall = workspace.service.recall
        if recall is None:
            return {"block": "", "attached": []}
        keys = [_split_key(key) for key in exclude]
        outcome = recall_for_message(recall, message, keys, strict=True)
        return outcome.to_dict()
    finally:
        workspace.close()


def _split_key(key: str) -> tuple[Any, str]:
    scope, _, note_id = key.partition(":")
    return (scope, note_id)


def library_index(home: str, start: str) -> str:
    """The Memory section (guidance and one line per note) for the project at ``start``."""
    from oharness.tools.workspace import open_workspace

    workspace = open_workspace(Path(start), Path(home), register=False)
    try:
        return workspace.memory_index()
    finally:
        workspace.close()


def handle_session_start(payload: Mapping[str, Any], home: str) -> str:
    """SessionStart: the Memory index; after ``/clear`` or compaction, notes may attach again."""
    source = payload.get("source") if isinstance(payload, dict) else None
    _, session_id, start = hook_fields(payload, None)
    if session_id and source in ("clear", "compact"):
        HookState(home).forget_session(session_id)
    return hook_output("SessionStart", library_index(home, start))
