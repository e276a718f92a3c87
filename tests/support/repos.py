"""Real git repositories for tests: one way to run git, with a fixed author."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(cwd: Path, *args: str) -> str:
    """``git ARGS`` in ``cwd`` (checked); its output, stripped."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **IDENTITY}
    )
    return done.stdout.decode().strip()
