"""Where machine-local state lives under ``$OHARNESS_HOME`` (spec 00, 01.3), kept private.

Everything in the home is the person's alone: :func:`secure_home` creates it 0700 and has
every later write under it make files 0600 and folders 0700 whatever the umask
(:func:`oharness.fsio.keep_private`). What an older version or another tool left readable by
others is tightened, with one notice: by any command when the home folder itself is readable
by others, and by the daemon at every start.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from oharness.fsio import keep_private
from oharness.types import Scope


@dataclass(frozen=True)
class HomeLayout:
    """The folders and files of one ``OHARNESS_HOME``."""

    home: Path

    @property
    def user_memory_dir(self) -> Path:
        return self.home / "memory" / "user"

    @property
    def backups_dir(self) -> Path:
        return self.home / "memory-backups"

    @property
    def usage_dir(self) -> Path:
        return self.home / "memory-usage"

    @property
    def locks_dir(self) -> Path:
        return self.home / "locks"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    @property
    def used_projects_dir(self) -> Path:
        """One mark per project folder this machine used (:mod:`oharness.project.used`)."""
        return self.home / "projects-used"

    @property
    def sync_dir(self) -> Path:
        """Sync state, one folder per scope key (:mod:`oharness.sync.ancestor`)."""
        return self.home / "memory-sync"

    def conflicts_dir(self, scope_key: str, directory: Path) -> Path:
        """The open sync conflicts of one notes folder (one ``<note id>.json`` each)."""
        return (
            self.sync_dir / scope_key_digest(folder_state_key(scope_key, directory)) / "conflicts"
        )

    @property
    def config_file(self) -> Path:
        return self.home / "config.json"

    @property
    def plugins_file(self) -> Path:
        return self.home / "plugins.json"

    @property
    def cloud_file(self) -> Path:
        return self.home / "cloud.json"

    def lock_path_for(self, directory: Path) -> Path:
        """The OS lock file that serialises writers of one notes directory."""
        digest = hashlib.sha256(os.path.realpath(directory).encode("utf-8")).hexdigest()
        return self.locks_dir / f"notes-{digest[:32]}.lock"


def default_home(environ_home: str | None, user_home: Path) -> Path:
    """``$OHARNESS_HOME`` when set, else ``~/.oharness`` (resolved by the caller's edge)."""
    if environ_home:
        return Path(environ_home).expanduser()
    return user_home / ".oharness"


def stable_scope_key(scope: Scope, project_id: str | None) -> str:
    """``project:<projectId>`` or ``user``: names per-scope state everywhere."""
    if scope == "user":
        return "user"
    if not project_id:
        raise ValueError("a project scope key needs the project id")
    return f"project:{project_id}"


def folder_state_key(scope_key: str, directory: Path) -> str:
    """The key of one notes folder's sync state: the scope key and the folder's real path (two
    clones of one project on one machine are two replicas, each with its own base)."""
    if scope_key == "user":
        return scope_key
    return f"{scope_key}@{os.path.realpath(directory)}"


def scope_key_digest(key: str) -> str:
    """SHA-256 hex of a stable scope key (names per-scope state files)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def secure_home(home: Path, *, thorough: bool = False) -> str | None:
    """Keep ``home`` private (see the module notes); the notice to show when anything in it was
    readable by other users, else ``None``. ``OSError`` when the folder cannot be made.
    ``thorough`` (the daemon, at start) walks the whole home even when its folder is 0700."""
    count = keep_private(home, thorough=thorough)
    if not count:
        return None
    things = "entry" if count == 1 else "entries"
    return (
        f"{count} {things} in {home} could be read by other users of this machine; they are now "
        "yours alone (files 0600, folders 0700)"
    )
