"""Claude Code hooks: per-prompt recall (``UserPromptSubmit``) and the index (``SessionStart``).

Contract followed: the Claude Code hooks reference as of late 2026 (Claude Code 2.1.x). A
command hook gets one JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, plus ``prompt`` for UserPromptSubmit and ``source`` —
``startup|resume|clear|compact`` — for SessionStart). On exit 0, a JSON object on stdout with
``hookSpecificOutput: {hookEventName, additionalContext}`` adds ``additionalContext`` to the
model's context. Printing nothing adds nothing; any failure here prints nothing and exits 0.

The daemon path uses only the standard library (the daemon's recall endpoint over loopback
HTTP on a plain socket); the library path imports the memory engine only when no daemon answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from oharness.bridges.discovery import post_json, read_daemon_address

MAX_SESSIONS: Final = 200
MAX_IDS_PER_SESSION: Final = 500
MAX_PROMPT_CHARS: Final = 20_000
DAEMON_TIMEOUT_S: Final = 2.0
_PROJECT_FILE: Final = Path(".oharness") / "project.json"


class HookState:
    """Which notes each Claude Code session already has: ``<home>/hooks/claude-code/``."""

    def __init__(self, home: Path) -> None:
        self.directory = home / "hooks" / "claude-code" / "sessions"

    def path(self, session_id: str) -> Path:
        """The file holding one session's record."""
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.directory / f"{digest}.json"

    def attached(self, session_id: str) -> list[str]:
        """The ``scope:id`` keys attached so far in this session (oldest first)."""
        try:
            data = json.loads(self.path(session_id).read_text("utf-8"))
        except (OSError, ValueError):
            return []
        keys = data.get("attached") if isinstance(data, dict) else None
        return [key for key in keys if isinstance(key, str)] if isinstance(keys, list) else []

    def save(self, session_id: str, keys: list[str], via: str) -> None:
        """Record the session's keys (bounded) and which path answered; prune old sessions."""
        self.directory.mkdir(parents=True, exist_ok=True)
        kept = list(dict.fromkeys(keys))[-MAX_IDS_PER_SESSION:]
        path = self.path(session_id)
        temp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump({"attached": kept, "via": via, "updatedAt": int(time.time() * 1000)}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
        self._prune()

    def forget_session(self, session_id: str) -> None:
        """Drop a session's record (after ``/clear`` or a compaction)."""
        self.path(session_id).unlink(missing_ok=True)

    def _prune(self) -> None:
        entries = sorted(self.directory.glob("*.json"), key=_mtime)
        for stale in entries[: max(0, len(entries) - MAX_SESSIONS)]:
            stale.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def project_id_of(start: Path, home: Path) -> str | None:
    """The registered project id at or above ``start`` (as the library finds it), if any."""
    home_resolved = home.resolve()
    for directory in (start, *start.parents):
        candidate = directory / _PROJECT_FILE
        if candidate.is_file() and candidate.parent.resolve() != home_resolved:
            try:
                data = json.loads(candidate.read_text("utf-8"))
            except (OSError, ValueError):
                return None
            value = data.get("id") if isinstance(data, dict) else None
            return value if isinstance(value, str) else None
    return None


def daemon_recall(home: Path, start: Path, message: str, exclude: list[str]) -> dict[str, Any]:
    """Ask the running daemon; raises ``OSError``/``ValueError`` when it cannot answer."""
    url, token = read_daemon_address(home)
    project_id = project_id_of(start, home)
    if project_id is None:
        raise ValueError("no registered project here; the daemon hosts registered projects only")
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None:
        raise ValueError(f"daemon URL {url!r} is not plain loopback HTTP")
    body = json.dumps({"message": message, "exclude": exclude}).encode("utf-8")
    payload = post_json(
        parts.hostname,
        parts.port or 80,
        f"/workspaces/{project_id}/recall",
        token,
        body,
        DAEMON_TIMEOUT_S,
    )
    result = json.loads(payload)
    if not isinstance(result, dict):
        raise ValueError("daemon answered with something other than an object")
    return result


def library_recall(home: Path, start: Path, message: str, exclude: list[str]) -> dict[str, Any]:
    """Recall in this process, through the library (no daemon)."""
    from oharness.tools.attach import recall_for_message
    from oharness.tools.workspace import open_workspace

    workspace = open_workspace(start, home, register=False)
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


def library_index(home: Path, start: Path) -> str:
    """The Memory section (guidance and one line per note) for the project at ``start``."""
    from oharness.tools.prompt import render_index
    from oharness.tools.workspace import open_workspace

    workspace = open_workspace(start, home, register=False)
    try:
        return render_index(workspace.service.all_notes(), workspace.settings.memory.index_chars)
    finally:
        workspace.close()


def _output(event: str, context: str) -> str:
    if not context.strip():
        return ""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}},
        ensure_ascii=False,
    )


def handle_prompt(payload: Mapping[str, Any], home: Path, *, use_daemon: bool = True) -> str:
    """UserPromptSubmit: the recalled block for the prompt, each note once per session."""
    prompt, session_id, start = _fields(payload, "prompt")
    state = HookState(home)
    already = state.attached(session_id) if session_id else []
    message = prompt[:MAX_PROMPT_CHARS]
    result: dict[str, Any] | None = None
    via = "daemon"
    if use_daemon:
        try:
            result = daemon_recall(home, start, message, already)
        except (OSError, ValueError):
            result = None  # no daemon, or it cannot help: the library answers instead
    if result is None:
        via = "library"
        result = library_recall(home, start, message, already)
    block = result.get("block")
    attached = result.get("attached")
    if not isinstance(block, str) or not block.strip():
        return ""
    new_keys = [
        f"{item['scope']}:{item['id']}"
        for item in (attached if isinstance(attached, list) else [])
        if isinstance(item, dict) and isinstance(item.get("id"), str)
    ]
    if session_id:
        state.save(session_id, [*already, *new_keys], via)
    return _output("UserPromptSubmit", block)


def handle_session_start(payload: Mapping[str, Any], home: Path) -> str:
    """SessionStart: the Memory index; after ``/clear`` or compaction, notes may attach again."""
    source = payload.get("source")
    _, session_id, start = _fields(payload, None)
    if session_id and source in ("clear", "compact"):
        HookState(home).forget_session(session_id)
    return _output("SessionStart", library_index(home, start))


def _fields(payload: Mapping[str, Any], text_key: str | None) -> tuple[str, str, Path]:
    if not isinstance(payload, Mapping):
        raise ValueError("the hook input is not a JSON object")
    text = payload.get(text_key, "") if text_key else ""
    if not isinstance(text, str):
        raise ValueError(f"{text_key} is not a string")
    session_id = payload.get("session_id")
    session = session_id if isinstance(session_id, str) else ""
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd or not os.path.isabs(cwd):
        raise ValueError("cwd is missing or not an absolute path")
    start = Path(cwd)
    if not start.is_dir():
        raise ValueError(f"cwd {cwd} is not a folder")
    return text, session, start
