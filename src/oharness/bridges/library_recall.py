"""Recall in the hook's own process, through the library: the answer when no daemon does.

The per-prompt hook (:mod:`oharness.bridges.prompt_hook`) asks the daemon first and imports
this module, and with it the memory engine, only when no daemon answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def library_recall(home: str, start: str, message: str, exclude: list[str]) -> dict[str, Any]:
    """Recall in this process, through the library (no daemon)."""
    from oharness.memory.attach import recall_for_message
    from oharness.memory.workspace import open_workspace

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
