"""The projects this machine has used, so the daemon can sync every one of them.

Whatever opens a registered project's memory (the CLI, the MCP server, the hooks, the daemon,
the SDK) leaves one small file per project folder in ``$OHARNESS_HOME/projects-used/``: the
folder and the project's id, written 0600 and atomically the first time, and never again while
it says the same (one ``stat`` on every later open, no daemon call). The daemon's background
sync reads the folder every few seconds and hosts each project it finds, so a note written by
any interface syncs with no command and no prompt (spec 07.5 as changed for issue 29).

A folder that is gone (or no longer that project) is dropped by the daemon when it looks, and
so is a project removed from the daemon with ``DELETE /workspaces/{projectId}`` (until it is
used again).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from oharness.errors import OHarnessError
from oharness.fsio import atomic_write, make_directory, remove_file
from oharness.project.paths import HomeLayout

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UsedProject:
    """One project folder this machine has used."""

    root: Path
    project_id: str
    #: The mark's own file (removed when the folder is gone).
    mark: Path
    #: The project's notes folder (its sync state is kept per notes folder).
    memory_dir: Path | None = None


def _mark_path(layout: HomeLayout, root: Path) -> Path:
    digest = hashlib.sha256(os.path.realpath(root).encode("utf-8")).hexdigest()[:32]
    return layout.used_projects_dir / f"{digest}.json"


def _encode(root: Path, project_id: str, memory_dir: Path) -> bytes:
    data = {
        "root": os.path.realpath(root),
        "projectId": project_id,
        "memoryDir": os.path.realpath(memory_dir),
    }
    return json.dumps(data, sort_keys=True).encode("utf-8")


def mark_used(layout: HomeLayout, root: Path, project_id: str, memory_dir: Path) -> None:
    """Remember that this machine used the project at ``root`` (cheap once written).

    Never raises: a mark that cannot be written is logged, and the project still works (it
    syncs once something else marks it, or with ``oharness sync now``).
    """
    path = _mark_path(layout, root)
    data = _encode(root, project_id, memory_dir)
    if _holds(path, data):
        return
    try:
        make_directory(path.parent)
        atomic_write(path, data, mode=0o600)
    except (OSError, OHarnessError) as exc:
        log.warning("cannot note that %s was used (%s); it syncs once noted", root, exc)


def _holds(path: Path, data: bytes) -> bool:
    """Whether the mark at ``path`` already says ``data`` (one ``stat`` when it does not)."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:  # not written yet
        return False


def used_projects(layout: HomeLayout) -> list[UsedProject]:
    """Every project folder marked as used, in a stable order (unreadable marks left out)."""
    try:
        names = sorted(os.listdir(layout.used_projects_dir))
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith(".json"):
            continue
        path = layout.used_projects_dir / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            root, project_id = data["root"], data["projectId"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        memory_dir = data.get("memoryDir")
        if isinstance(root, str) and isinstance(project_id, str):
            notes = Path(memory_dir) if isinstance(memory_dir, str) else None
            found.append(UsedProject(Path(root), project_id, path, notes))
    return found


def forget_folder(layout: HomeLayout, root: Path) -> None:
    """Stop following the project at ``root`` until something uses it again."""
    forget_used(UsedProject(root, "", _mark_path(layout, root)))


def forget_used(project: UsedProject) -> None:
    """Drop a mark (its folder is gone or is another project now)."""
    try:
        remove_file(project.mark)
    except (OSError, OHarnessError) as exc:
        log.warning("cannot drop the mark of %s (%s)", project.root, exc)
