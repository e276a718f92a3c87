"""What git says about a folder: its repository's top level, main worktree and worktrees.

Import needs this to tell whether a Claude Code project folder belongs to the current project
(a linked worktree or a clone of the same repository). Every question is one ``git``
subprocess with a timeout; a folder outside a repository, or no git at all, answers ``None``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_TIMEOUT_SECONDS: Final = 10


@dataclass(frozen=True)
class GitPlace:
    """A folder's repository: its work tree's top level and the repository's main worktree."""

    top_level: Path
    common_dir: Path
    main_worktree: Path | None  # None for a bare repository

    @property
    def is_linked_worktree(self) -> bool:
        """True in a worktree made by ``git worktree add`` (not the main one)."""
        return self.main_worktree is not None and self.main_worktree != self.top_level


def _git(folder: Path, *args: str) -> list[str] | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.splitlines()


def git_place(folder: Path) -> GitPlace | None:
    """The repository ``folder`` is in, or ``None`` outside one."""
    lines = _git(folder, "rev-parse", "--show-toplevel", "--git-common-dir")
    if lines is None or len(lines) < 2 or not lines[0]:
        return None
    top_level = Path(lines[0]).resolve()
    common = Path(lines[1])
    common = (common if common.is_absolute() else folder / common).resolve()
    main = common.parent if common.name == ".git" else None
    return GitPlace(top_level, common, main)


def worktree_paths(folder: Path) -> list[Path]:
    """Every worktree of ``folder``'s repository (main first), as ``git worktree list`` has it."""
    lines = _git(folder, "worktree", "list", "--porcelain") or []
    prefix = "worktree "
    return [Path(line[len(prefix) :]).resolve() for line in lines if line.startswith(prefix)]


def root_commit(folder: Path) -> str | None:
    """The smallest root commit of ``folder``'s repository: the same in every clone of it."""
    lines = _git(folder, "rev-list", "--max-parents=0", "HEAD")
    roots = sorted(line for line in lines or [] if line)
    return roots[0] if roots else None
