"""A project's first use on this machine: have the running daemon host it and pull its notes
before they are read, so the first session (or the first command) in a fresh clone lists what
the other machines wrote (issues 26 and 29). Used by the session-start hook and by the CLI's
reading commands; the daemon's :mod:`~oharness.daemon.background.following` keeps it synced
from then on.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Final

from oharness.bridges.prompt_hook import (
    DaemonRefused,
    cooling_down,
    daemon_address,
    post_json,
    start_cooldown,
)

#: How long a first use waits for the daemon to say whether it hosts the project (every
#: session start where a daemon runs; a hung daemon costs this once), and for the pull of a
#: project it did not host (once per project and machine) or of a second clone.
HOST_WAIT_S: Final = 1.0
PULL_WAIT_S: Final = 5.0


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
