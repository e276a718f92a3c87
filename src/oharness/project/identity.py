"""Finding and registering projects (spec 01.4, 01.8).

A project is found by :mod:`oharness.project.discovery` (the nearest marker, with a git
repository's top level as a boundary and a linked worktree read as its main one). Registering
creates ``.oharness/project.json`` (id ``git-<root commit>`` in a git repository with at least
one commit, ``p-<32 hex>`` elsewhere), ``MEMORY/`` and ``ARTIFACTS/``. The id is written once
(an exclusive create, so two processes registering at once agree) and never recomputed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from oharness.errors import ProjectError
from oharness.fsio import fsync_directory, temp_path_for
from oharness.project.discovery import discover, is_bare_repository, never_project, refusal
from oharness.types import Clock, HexSource

STATE_DIR: Final = ".oharness"
PROJECT_FILE: Final = "project.json"
ARTIFACTS_DIR: Final = "ARTIFACTS"
DEFAULT_MEMORY_DIR: Final = "MEMORY"


@dataclass(frozen=True)
class ProjectLocation:
    """Where a command's project is, whether it is registered, and why it may not be used.

    ``refused`` is the one-line reason the project at ``root`` may neither be used nor
    registered (another user's marker, a world-writable folder, the home folder, …);
    ``worktree`` is the linked git worktree the command ran in, when it did.
    """

    root: Path
    registered: bool
    refused: str | None = None
    worktree: Path | None = None


@dataclass(frozen=True)
class ProjectIdentity:
    """The contents of ``.oharness/project.json``."""

    id: str
    created_at: int


def _is_inside(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
    except ValueError:
        return False
    return True


def find_project(start: Path, home: Path) -> ProjectLocation | None:
    """The project a command run in ``start`` works on; ``None`` inside ``OHARNESS_HOME``.

    The rule is :func:`oharness.project.discovery.discover`'s (spec 01.8).
    """
    found = discover(str(start), str(home))
    if found is None:
        return None
    return ProjectLocation(
        Path(found.root),
        found.registered,
        found.refused,
        Path(found.worktree) if found.worktree else None,
    )


def registers_itself(root: Path) -> bool:
    """Whether the project at ``root`` registers itself on first use (an agent's session, a
    project note, the daemon started there): only where it clearly is one, a git checkout,
    or a bare repository whose worktrees stand for it; never a plain folder."""
    return (root / ".git").exists() or is_bare_repository(str(root))


def registers_on_use(start: Path, home: Path) -> bool:
    """Whether an agent's session started in ``start`` registers its project on first use
    (``oharness mcp``, in-process or through the daemon): :func:`registers_itself`."""
    location = find_project(start, home)
    return location is not None and registers_itself(location.root)


def git_root_commit(root: Path) -> str | None:
    """The root commit of the repository at ``root`` (smallest when several), if any."""
    if not (root / ".git").exists() and not is_bare_repository(str(root)):
        return None
    import subprocess  # here: a prompt hook opening a registered project never needs it

    try:
        result = subprocess.run(
            ["git", "-C", str(root), "rev-list", "--max-parents=0", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    roots = sorted(line.strip() for line in result.stdout.splitlines() if line.strip())
    return roots[0] if result.returncode == 0 and roots else None


def read_identity(root: Path) -> ProjectIdentity:
    """Read ``.oharness/project.json``, or raise a clear :class:`ProjectError`."""
    path = root / STATE_DIR / PROJECT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProjectError(
            f"{root} is not a registered project; run 'oharness project init' there",
            path=str(path),
        ) from exc
    except (OSError, ValueError) as exc:
        raise ProjectError(
            f"{path} cannot be read as JSON ({exc}); fix it or run 'oharness project reset-id'",
            path=str(path),
        ) from exc
    project_id = data.get("id") if isinstance(data, dict) else None
    if not isinstance(project_id, str) or not project_id:
        raise ProjectError(
            f"{path} has no project id; fix it or run 'oharness project reset-id'",
            path=str(path),
        )
    created = data.get("createdAt")
    return ProjectIdentity(project_id, created if isinstance(created, int) else 0)


def _write_exclusive(path: Path, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists; True when we created it."""
    temp = temp_path_for(path)
    with open(temp, "xb") as handle:
        os.fchmod(handle.fileno(), os.stat(handle.fileno()).st_mode & 0o755)  # not o+w
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(temp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(temp)
    fsync_directory(path.parent)
    return True


def new_project_id(
    root: Path, hex_source: HexSource, root_commit: Callable[[Path], str | None]
) -> str:
    """``git-<root commit>`` in a git repository with commits, else ``p-<32 hex>``."""
    commit = root_commit(root)
    return f"git-{commit}" if commit else f"p-{hex_source(32)}"


def check_registrable(root: Path, home: Path) -> None:
    """Raise :class:`ProjectError`, with the reason and the fix, where spec 01.8 forbids a
    project at ``root`` (see :func:`register_project`)."""
    real, home_real = os.path.realpath(root), os.path.realpath(home)
    reason = never_project(real, home_real)
    if reason is not None:
        raise ProjectError(
            f"{reason}, which is never a project; run the command in your project folder",
            path=str(root),
        )
    problem = refusal(real, home_real, marker=(root / STATE_DIR / PROJECT_FILE).exists())
    if problem is not None:
        raise ProjectError(problem, path=str(root))


def preview_identity(
    root: Path, home: Path, *, clock: Clock, hex_source: HexSource
) -> ProjectIdentity:
    """The identity :func:`register_project` would give ``root``, with nothing written (what
    a dry run shows); refused as registering would be."""
    check_registrable(root, home)
    return ProjectIdentity(new_project_id(root, hex_source, git_root_commit), clock())


def register_project(
    root: Path,
    home: Path,
    *,
    clock: Clock,
    hex_source: HexSource,
    memory_dir: Path | None = None,
    root_commit: Callable[[Path], str | None] = git_root_commit,
) -> ProjectIdentity:
    """Make ``root`` a project (idempotent) and return its identity.

    Refused, with the reason and the fix, where spec 01.8 forbids a project: the home
    folder, ``OHARNESS_HOME``, file-system and mount roots, the system temp root, system
    folders, and folders of another user or writable by every user.
    """
    check_registrable(root, home)
    state = root / STATE_DIR
    try:
        for folder in (state, root / ARTIFACTS_DIR, memory_dir or root / DEFAULT_MEMORY_DIR):
            if not folder.is_dir():
                folder.mkdir(parents=True, exist_ok=True)
                # Under umask 000 it would be writable by every user: refused as a project
                # folder on the next start, and open to anyone's notes meanwhile.
                mode = folder.stat().st_mode & 0o7777
                if mode & 0o002:
                    folder.chmod(mode & ~0o022)
        path = state / PROJECT_FILE
        if not path.exists():
            identity = {
                "id": new_project_id(root, hex_source, root_commit),
                "createdAt": clock(),
            }
            _write_exclusive(path, (json.dumps(identity, indent=2) + "\n").encode("utf-8"))
    except OSError as exc:
        raise ProjectError(
            f"cannot register {root} as a project: {exc.strerror or exc}; check permissions",
            path=str(root),
        ) from exc
    return read_identity(root)


def reset_project_id(root: Path, *, hex_source: HexSource, clock: Clock) -> ProjectIdentity:
    """Give a registered project a new random id on purpose (e.g. after copying a folder)."""
    from oharness.fsio import atomic_write

    read_identity(root)
    identity = {"id": f"p-{hex_source(32)}", "createdAt": clock()}
    atomic_write(
        root / STATE_DIR / PROJECT_FILE, (json.dumps(identity, indent=2) + "\n").encode("utf-8")
    )
    return read_identity(root)


def resolve_memory_dir(root: Path, configured: str | None, source: str) -> Path:
    """The project's notes folder: ``memory.dir`` relative to the root, else ``MEMORY/``."""
    if configured is None or configured == "":
        return root / DEFAULT_MEMORY_DIR
    relative = Path(configured)
    normal = os.path.normpath(configured)
    if relative.is_absolute() or normal == ".." or normal.startswith(".." + os.sep):
        raise ProjectError(
            f"{source}: memory.dir {configured!r} must be a path inside the project, relative "
            "to its root (e.g. 'docs/memory')",
            key="memory.dir",
        )
    target = root / normal
    if normal == "." or not _is_inside(target, root):
        raise ProjectError(
            f"{source}: memory.dir {configured!r} leaves the project folder or is its root; "
            "use a subfolder (e.g. 'docs/memory')",
            key="memory.dir",
        )
    return target
