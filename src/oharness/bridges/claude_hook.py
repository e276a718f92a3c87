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
                f"{index}\nThis folder is a second clone of the project on this machine: "
                "'oharness sync conflicts' run here lists its conflicts (the Memory page shows "
                "those of the clone the daemon hosts)."
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


def pull_on_first_use(home: str, start: str, log: Callable[[str], None]) -> bool:
    """A project the running daemon does not host yet (a fresh clone on this machine): have
    it host the project and pull its notes before the index is read, so the first session
    there sees what other machines wrote. A second clone of a project the daemon hosts from
    another folder is its own replica: the daemon pulls that folder (at every session start
    there: a pass that finds nothing new is one request). Only a registered project or a git
    checkout (which an agent's session registers on use, as the MCP server does at the same
    moment); at most :data:`HOST_WAIT_S` + :data:`PULL_WAIT_S`; a failure is logged and the
    index is read as it is. True for a second clone."""
    from oharness.project.discovery import read_project_id
    from oharness.project.identity import find_project, registers_itself

    location = find_project(Path(start), Path(home))
    if location is None or location.refused is not None:
        return False
    if not location.registered and not registers_itself(location.root):
        return False
    try:
        host, port, token = daemon_address(home)
    except (OSError, ValueError):
        return False  # no daemon: nothing pulls for this machine yet
    if cooling_down(home):  # a daemon that did not answer in time lately
        return False
    body = json.dumps({"path": str(location.root), "create": not location.registered})
    pull, second_clone = b"{}", False
    try:
        hosted = post_json(host, port, "/workspaces", token, body.encode(), HOST_WAIT_S, ok=(201,))
        project_id = json.loads(hosted)["projectId"]
    except DaemonRefused as exc:  # hosted already (200), or from another folder (409)
        project_id = read_project_id(str(location.root)) if exc.status == 409 else None
        if project_id is None:
            return False
        # registered by the request if it was not: pulled as its own replica
        pull, second_clone = json.dumps({"path": str(location.root)}).encode(), True
    except TimeoutError:
        log(f"the daemon at {host}:{port} did not answer in time; skipped a while")
        with contextlib.suppress(OSError):
            start_cooldown(home)
        return False
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log(f"hosting {location.root} in the daemon: {type(exc).__name__}: {exc}")
        return False
    try:  # the pull goes on in the daemon past the wait; the index is read as it is then
        post_json(host, port, f"/workspaces/{project_id}/sync/now", token, pull, PULL_WAIT_S)
    except DaemonRefused as exc:  # not signed in, sync off: nothing to pull
        if exc.code == "folder_not_followed":
            log(f"pulling the notes of {location.root} first: {exc.message}")
    except (OSError, ValueError) as exc:
        log(f"pulling the notes of {location.root} first: {type(exc).__name__}: {exc}")
    return second_clone
