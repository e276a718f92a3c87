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

import contextlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from oharness.bridges.prompt_hook import (
    MAX_SESSIONS,
    DaemonRefused,
    HookState,
    cooling_down,
    daemon_address,
    handle_prompt,
    hook_fields,
    hook_output,
    post_json,
    start_cooldown,
)

__all__ = ["MAX_SESSIONS", "HookState", "handle_prompt", "handle_session_start"]

#: How long a session start waits for the daemon to say whether it hosts the project (every
#: session start where a daemon runs; a hung daemon costs this once), and for the first pull
#: of a project it did not host (once per project and machine).
HOST_WAIT_S: Final = 1.0
PULL_WAIT_S: Final = 5.0


def library_index(home: str, start: str) -> str:
    """The Memory section (guidance and one line per note) for the project at ``start``; with
    sync conflicts waiting and a daemon running, the Memory page's link to them too."""
    from oharness.memory.workspace import open_workspace

    workspace = open_workspace(Path(start), Path(home), register=False)
    try:
        index = workspace.memory_index()
        if not workspace.service.waiting_conflicts():
            return index
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
    pull_on_first_use(home, start, log)
    return hook_output("SessionStart", library_index(home, start))


def pull_on_first_use(home: str, start: str, log: Callable[[str], None]) -> None:
    """A project the running daemon does not host yet (a fresh clone on this machine): have
    it host the project and pull its notes before the index is read, so the first session
    there sees what other machines wrote. Only a registered project or a git checkout (which
    an agent's session registers on use, as the MCP server does at the same moment); at
    most :data:`HOST_WAIT_S` + :data:`PULL_WAIT_S`; a failure is logged and the index is
    read as it is."""
    from oharness.project.identity import find_project, registers_itself

    location = find_project(Path(start), Path(home))
    if location is None or location.refused is not None:
        return
    if not location.registered and not registers_itself(location.root):
        return
    try:
        host, port, token = daemon_address(home)
    except (OSError, ValueError):
        return  # no daemon: nothing pulls for this machine yet
    if cooling_down(home):  # a daemon that did not answer in time lately
        return
    body = json.dumps({"path": str(location.root), "create": not location.registered})
    try:
        hosted = post_json(host, port, "/workspaces", token, body.encode(), HOST_WAIT_S, ok=(201,))
        project_id = json.loads(hosted)["projectId"]
    except DaemonRefused:  # hosted already (200), or another folder's (409)
        return
    except TimeoutError:
        log(f"the daemon at {host}:{port} did not answer in time; skipped a while")
        with contextlib.suppress(OSError):
            start_cooldown(home)
        return
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log(f"hosting {location.root} in the daemon: {type(exc).__name__}: {exc}")
        return
    try:  # the pull goes on in the daemon past the wait; the index is read as it is then
        post_json(host, port, f"/workspaces/{project_id}/sync/now", token, b"{}", PULL_WAIT_S)
    except DaemonRefused:  # not signed in, sync off: nothing to pull
        return
    except (OSError, ValueError) as exc:
        log(f"pulling the notes of {location.root} first: {type(exc).__name__}: {exc}")
