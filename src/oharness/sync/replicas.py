"""Which machine-local sync state belongs to which notes folder (spec 07.1, amended).

Two clones of one git repository on one machine are two replicas of one project: each syncs
through the server and they converge. So the state a pass keeps (the base and its copies, the
open conflicts, the pass status, the pass lock) is kept per folder, in
``$OHARNESS_HOME/memory-sync/<sha256(scope key + "@" + the notes folder's real path)>/``; the
user scope has one folder per home and keeps ``<sha256("user")>``. The binding of a scope to an
account and origin stays per project: it names where the project's notes live, whichever
folder holds them.

A folder without state of its own gets one of:

- the state an earlier release kept for the project (keyed by the scope alone), when that state
  recorded this folder, or the state of a folder of the project that no longer holds it and
  was moved or renamed here (the same file id, :func:`folder_id`, or none recorded): taken
  over, so an upgrade or a move neither resyncs from zero nor turns edits into conflicts;
- a fresh state (a first sync: equal notes are recorded, nothing is deleted), when it is a git
  repository whose project id is ``git-<its own root commit>`` (a clone), or no other folder of
  the project has state here;
- a pause, when another folder here still holds the project and this one is not such a clone:
  a folder copied by hand, whose random ``p-…`` id (or copied marker) is not its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import filelock

from oharness.project.discovery import is_bare_repository
from oharness.project.identity import PROJECT_FILE, STATE_DIR, git_root_commit
from oharness.project.paths import scope_key_digest

#: How far above a notes folder its project marker is looked for (``memory.dir`` may nest).
_MARKER_DEPTH = 4


@dataclass(frozen=True)
class RecordedState:
    """A sync state folder of the scope and the notes folder its base last recorded."""

    folder: Path
    directory: str | None
    folder_id: str | None = None


@dataclass(frozen=True)
class Claim:
    """What a folder without state gets: a state to take over, or the other folder that holds
    the project (``None`` both: a fresh state), or ``busy`` (a pass holds the state to take)."""

    adopt: RecordedState | None = None
    other: Path | None = None
    busy: bool = False


def recorded_states(sync_dir: Path, scope_key: str) -> list[RecordedState]:
    """Every state folder under ``sync_dir`` whose base belongs to ``scope_key``."""
    found = []
    try:
        entries = list(os.scandir(sync_dir))
    except OSError:
        return []
    for entry in entries:
        try:
            data = json.loads((Path(entry.path) / "state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("scopeKey") == scope_key:
            directory, file_id = data.get("directory"), data.get("folderId")
            found.append(
                RecordedState(
                    Path(entry.path),
                    directory if isinstance(directory, str) else None,
                    file_id if isinstance(file_id, str) else None,
                )
            )
    return found


def holds_project(directory: str, project_id: str | None) -> bool:
    """True when ``directory`` still exists inside a project folder with ``project_id``."""
    path = Path(directory)
    if not path.is_dir():
        return False
    for root in [path, *path.parents][:_MARKER_DEPTH]:
        marker = root / STATE_DIR / PROJECT_FILE
        try:
            data = json.loads(marker.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return False
        return isinstance(data, dict) and data.get("id") == project_id
    return False


def claim(sync_dir: Path, scope_key: str, directory: Path, project_id: str | None) -> Claim:
    """Decide what the folder ``directory`` (with no state of its own) starts from."""
    here = os.path.realpath(directory)
    legacy = sync_dir / scope_key_digest(scope_key)
    others = recorded_states(sync_dir, scope_key)
    for state in others:
        recorded = state.directory
        if (recorded is not None and os.path.realpath(recorded) == here) or (
            recorded is None and state.folder == legacy
        ):
            return Claim(adopt=state)
    live = [s for s in others if s.directory and holds_project(s.directory, project_id)]
    if live:
        return Claim(other=Path(str(live[0].directory)))
    # A folder moved here keeps its file id; a fresh clone where a deleted one was has its own
    # (taking that one's base would read the notes it lacks as deletions).
    here_id = folder_id(directory)
    gone = [s for s in others if s.folder_id is None or s.folder_id == here_id]
    gone.sort(key=_saved_at, reverse=True)
    return Claim(adopt=gone[0]) if gone else Claim()


def folder_id(directory: Path) -> str | None:
    """``<st_dev>:<st_ino>`` of a notes folder, then ``@<st_ino>:<st_mtime_ns>`` of its
    project's marker when it has one (``None`` when the folder cannot be read).

    A move keeps both. A folder made anew does not keep the marker's: a file system gives a
    deleted folder's inode number to the next folder made (a clone deleted and cloned again
    at the same path often gets the old notes folder's number back), but the marker of the
    new clone is written then (by ``project init``, or by the checkout when it is committed),
    so its time is new."""
    try:
        info = os.stat(directory)
    except OSError:
        return None
    found = f"{info.st_dev}:{info.st_ino}"
    for root in [directory, *directory.parents][:_MARKER_DEPTH]:
        try:
            marker = os.stat(root / STATE_DIR / PROJECT_FILE)
        except OSError:
            continue
        return f"{found}@{marker.st_ino}:{marker.st_mtime_ns}"
    return found


def _saved_at(state: RecordedState) -> float:
    try:
        return (state.folder / "state.json").stat().st_mtime
    except OSError:
        return 0.0


def take_over(state: RecordedState, own: Path) -> bool:
    """Move ``state``'s folder to ``own`` under its pass lock; False while a pass holds it."""
    lock = filelock.FileLock(state.folder / "lock", timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        return False
    try:
        if own.exists() and not (own / "state.json").exists():
            shutil.rmtree(own, ignore_errors=True)  # only a status written before any pass
        with contextlib.suppress(FileNotFoundError):  # another process took it first
            os.rename(state.folder, own)
    except OSError:
        return False
    finally:
        lock.release()
    return True


def is_git_clone(root: Path | None, project_id: str | None) -> bool:
    """True for a git repository whose project id is ``git-<its own root commit>`` (a clone of
    the repository the id was made in); a shallow clone, which cannot show its root commit,
    counts when it is a git repository at all."""
    if root is None or not project_id or not project_id.startswith("git-"):
        return False
    if not (root / ".git").exists() and not is_bare_repository(str(root)):
        return False
    if git_root_commit(root) == project_id.removeprefix("git-"):
        return True
    try:
        shallow = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-shallow-repository"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return shallow.returncode == 0 and shallow.stdout.strip() == "true"
