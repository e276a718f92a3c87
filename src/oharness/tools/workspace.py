"""Opening the memory of a project directory and an ``OHARNESS_HOME`` (spec 01.3–01.8)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oharness.notes.backups import BackupStore
from oharness.notes.ids import random_hex
from oharness.notes.store import NoteStore
from oharness.project.config import load_settings
from oharness.project.identity import (
    STATE_DIR,
    ProjectIdentity,
    find_project,
    read_identity,
    register_project,
    resolve_memory_dir,
)
from oharness.project.paths import HomeLayout, stable_scope_key
from oharness.settings import Settings
from oharness.tools.prompt import render_index
from oharness.tools.recall import MemoryRecall
from oharness.tools.service import MemoryService, ScopeHandle
from oharness.tools.usage import UsageLog
from oharness.types import Clock, HexSource, Scope


def wall_clock_ms() -> int:
    """Milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class ProjectInfo:
    """A project as a command sees it."""

    root: Path
    identity: ProjectIdentity | None
    memory_dir: Path

    @property
    def registered(self) -> bool:
        return self.identity is not None


@dataclass
class Workspace:
    """Everything a command needs: settings, the project, stores, backups and the service."""

    home: HomeLayout
    settings: Settings
    project: ProjectInfo | None
    service: MemoryService
    warnings: list[str] = field(default_factory=list)

    @property
    def user_available(self) -> bool:
        return "user" in self.service.available_scopes()

    def memory_index(self) -> str:
        """The Memory section of the system prompt, as a model sees it."""
        return render_index(self.service.all_notes(), self.settings.memory.index_chars)

    def close(self) -> None:
        """Save derived state worth keeping (the recall cache, when enough changed)."""
        if self.service.recall is not None:
            self.service.recall.flush_cache()


def _home_usable(home: HomeLayout) -> str | None:
    """``None`` when the home can hold user notes and state, else the reason it cannot."""
    for directory in (home.home, *home.home.parents):
        if directory.exists() or directory.is_symlink():
            if not directory.is_dir():
                return f"{directory} is a file, not a folder"
            break
    try:
        home.user_memory_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{exc.strerror or exc}"
    for directory in (home.home, home.user_memory_dir):
        if not os.access(directory, os.W_OK | os.X_OK):
            return f"{directory} is not writable"
    return None


def open_workspace(
    start: Path,
    home: Path,
    *,
    register: bool,
    clock: Clock = wall_clock_ms,
    hex_source: HexSource = random_hex,
    overrides: dict[str, Any] | None = None,
) -> Workspace:
    """Find (and with ``register``, register) the project at ``start`` and open its memory."""
    layout = HomeLayout(home)
    warnings: list[str] = []
    location = find_project(start, home)
    home_problem = _home_usable(layout)
    # An unusable home has no config to read; the warning below names the real cause.
    settings = load_settings(
        layout.config_file if home_problem is None else None,
        location.root if location else None,
        overrides=overrides,
    )
    warnings.extend(settings.warnings)

    project: ProjectInfo | None = None
    if location is not None:
        source = str(location.root / STATE_DIR / "config.json")
        memory_dir = resolve_memory_dir(location.root, settings.memory.dir, source)
        identity: ProjectIdentity | None = None
        if location.registered:
            identity = read_identity(location.root)
        elif register:
            identity = register_project(
                location.root, home, clock=clock, hex_source=hex_source, memory_dir=memory_dir
            )
        project = ProjectInfo(location.root, identity, memory_dir)

    scopes: dict[Scope, ScopeHandle] = {}
    unavailable: dict[Scope, str] = {}
    memory = settings.memory
    if project is not None and project.identity is not None:
        # Without a usable home the lock lives in the project's own state folder.
        lock_path = (
            layout.lock_path_for(project.memory_dir)
            if home_problem is None
            else project.root / STATE_DIR / "locks" / "notes.lock"
        )
        store = NoteStore(
            project.memory_dir, scope="project", lock_path=lock_path, max_notes=memory.max_notes
        )
        scopes["project"] = ScopeHandle(store, stable_scope_key("project", project.identity.id))
    elif project is None:
        unavailable["project"] = (
            f"{start} is inside OHARNESS_HOME ({home}), which is never a project; "
            "project notes are not available here"
        )
    else:
        unavailable["project"] = (
            f"no registered project at {project.root}: run 'oharness project init' there to "
            "keep project notes (a git repository registers itself), or use --scope user"
        )
        warnings.append(
            f"no registered project at {project.root}: showing user notes only "
            "('oharness project init' registers it)"
        )

    backups: BackupStore | None = None
    backups_problem: str | None = None
    if home_problem is None:
        store = NoteStore(
            layout.user_memory_dir,
            scope="user",
            lock_path=layout.lock_path_for(layout.user_memory_dir),
            max_notes=memory.max_notes,
        )
        scopes["user"] = ScopeHandle(store, stable_scope_key("user", None))
        backups = BackupStore(layout.backups_dir, clock=clock)
    else:
        message = (
            f"OHARNESS_HOME ({home}) cannot be used ({home_problem}): user notes, backups and "
            "machine-local memory state are unavailable; project notes still work"
        )
        warnings.append(message)
        unavailable["user"] = message
        backups_problem = (
            f"backups need a writable OHARNESS_HOME ({home}: {home_problem}); nothing that "
            "would need a backup is done until it is writable (set OHARNESS_HOME to a folder "
            "you can write)"
        )

    recall = MemoryRecall(
        {scope: handle.store for scope, handle in scopes.items()},
        memory.recall,
        scope_keys={scope: handle.key for scope, handle in scopes.items()},
        clock=clock,
        cache_dir=layout.cache_dir if home_problem is None else None,
        usage=UsageLog(layout.usage_dir, clock=clock) if home_problem is None else None,
    )
    service = MemoryService(
        scopes,
        recall=recall,
        backups=backups,
        clock=clock,
        max_note_bytes=memory.max_note_bytes,
        hex_source=hex_source,
        unavailable=unavailable,
        backups_unavailable=backups_problem,
    )
    for scope in service.available_scopes():
        unloaded = service.store(scope).unloaded()
        if unloaded:
            warnings.append(
                f"{len(unloaded)} {scope} notes were not loaded: the scope holds more than "
                f"memory.maxNotes ({memory.max_notes}); the least recently modified are left out"
            )
    return Workspace(layout, settings, project, service, warnings)
