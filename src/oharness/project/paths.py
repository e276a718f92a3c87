"""Where machine-local state lives under ``$OHARNESS_HOME`` (spec 00, 01.3)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

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


def scope_key_digest(key: str) -> str:
    """SHA-256 hex of a stable scope key (names per-scope state files)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()
