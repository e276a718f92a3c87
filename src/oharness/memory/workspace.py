"""Opening the memory of a project directory and an ``OHARNESS_HOME`` (spec 01.3–01.8)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oharness.fsio import make_directory
from oharness.memory.memory_service import MemoryService, ScopeHandle
from oharness.memory.prompt import render_index
from oharness.memory.scope_recall import MemoryRecall
from oharness.memory.usage import UsageLog
from oharness.notes.backups import BackupStore
from oharness.notes.ids import random_hex
from oharness.notes.snapshot import snapshot_path
from oharness.notes.store import NoteStore
from oharness.project.config import load_settings
from oharness.project.discovery import refusal
from oharness.project.identity import (
    STATE_DIR,
    ProjectIdentity,
    ProjectLocation,
    find_project,
    preview_identity,
    read_identity,
    register_project,
    registers_itself,
    resolve_memory_dir,
)
from oharness.project.paths import HomeLayout, secure_home, stable_scope_key
from oharness.project.used import mark_used
from oharness.settings import MemorySettings, Settings
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
    #: Why this project may not be used here (another user's marker, the home folder, …).
    refused: str | None = None

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
        """The Memory section of the system prompt, as a model sees it. It speaks of project
        notes where they can be written: a registered project, or a git checkout not registered
        yet (an agent's first project note registers it)."""
        scopes = self.service.available_scopes()
        project = self.project
        if (
            "project" not in scopes
            and project is not None
            and project.refused is None
            and registers_itself(project.root)
        ):
            scopes = ["project", *scopes]
        return render_index(
            self.service.all_notes(),
            self.settings.memory.index_chars,
            self.service.waiting_conflicts(),
            scopes,
        )

    def close(self) -> None:
        """Save derived state worth keeping (the recall cache, when enough changed)."""
        if self.service.recall is not None:
            self.service.recall.flush_cache()


def _secure(home: Path) -> str | None:
    """Keep the home private (files 0600, folders 0700); the notice when it was not."""
    try:
        return secure_home(home)
    except OSError:
        return None  # an unusable home: _home_usable says why


def _home_usable(home: HomeLayout) -> str | None:
    """``None`` when the home can hold user notes and state, else the reason it cannot."""
    for directory in (home.home, *home.home.parents):
        if directory.exists() or directory.is_symlink():
            if not directory.is_dir():
                return f"{directory} is a file, not a folder"
            break
    try:
        make_directory(home.user_memory_dir)
    except OSError as exc:
        return f"{exc.strerror or exc}"
    for directory in (home.home, home.user_memory_dir):
        if not os.access(directory, os.W_OK | os.X_OK):
            return f"{directory} is not writable"
    return None


def notes_folder_at(path: Path, home: Path) -> tuple[Path, Path] | None:
    """The registered project ``path`` (or its nearest existing folder) is in and that
    project's notes folder, as its settings name it; None outside one. Nothing is written."""
    existing = next((folder for folder in (path, *path.parents) if folder.is_dir()), None)
    location = None if existing is None else find_project(existing, home)
    if location is None or not location.registered or location.refused is not None:
        return None
    layout = HomeLayout(home)
    config = layout.config_file if _home_usable(layout) is None else None
    settings = load_settings(config, location.root)
    source = str(location.root / STATE_DIR / "config.json")
    return location.root, resolve_memory_dir(location.root, settings.memory.dir, source)


def open_workspace(
    start: Path,
    home: Path,
    *,
    register: bool,
    preview: bool = False,
    clock: Clock = wall_clock_ms,
    hex_source: HexSource = random_hex,
    overrides: dict[str, Any] | None = None,
    file_clock: Clock = wall_clock_ms,
) -> Workspace:
    """Find (and with ``register``, register) the project at ``start`` and open its memory.

    ``preview`` (a dry run of a command that would register): an unregistered project opens
    as though registered, its notes folder as registering would leave it, and nothing is
    written to it, so the dry run shows what the real run does. ``clock`` stamps notes and
    backups; ``file_clock`` is what the stores compare file times with (stale temp files, a
    folder changed too recently to trust its mtime): the real time unless a test moves it.
    """
    layout = HomeLayout(home)
    location = find_project(start, home)
    privacy = _secure(home)
    home_problem = _home_usable(layout)
    # An unusable home has no config to read; the warning below names the real cause.
    settings = load_settings(
        layout.config_file if home_problem is None else None,
        location.root if location and location.refused is None else None,
        overrides=overrides,
    )
    warnings = [*settings.warnings, *([privacy] if privacy else [])]
    opened = _Opening(
        layout, start, settings.memory, home_problem, clock, warnings, file_clock=file_clock
    )
    project = _project_info(location, settings, register, home, clock, hex_source, preview)
    opened.add_project_scope(project)
    backups = opened.add_user_scope()
    service = MemoryService(
        opened.scopes,
        recall=opened.recall(),
        backups=backups,
        clock=clock,
        max_note_bytes=settings.memory.max_note_bytes,
        hex_source=hex_source,
        unavailable=opened.unavailable,
        backups_unavailable=opened.backups_problem(),
    )
    opened.warn_unloaded(service)
    previewed = preview and location is not None and not location.registered
    if project is not None and project.identity is not None and not home_problem and not previewed:
        # the daemon syncs it from now on
        mark_used(layout, project.root, project.identity.id, project.memory_dir)
    return Workspace(layout, settings, project, service, opened.warnings)


def _project_info(
    location: ProjectLocation | None,
    settings: Settings,
    register: bool,
    home: Path,
    clock: Clock,
    hex_source: HexSource,
    preview: bool = False,
) -> ProjectInfo | None:
    """The project found at the start folder (registered now when asked, or as registering
    would leave it with ``preview``), if any."""
    if location is None:
        return None
    if location.refused is not None:
        return ProjectInfo(location.root, None, location.root / "MEMORY", location.refused)
    source = str(location.root / STATE_DIR / "config.json")
    memory_dir = resolve_memory_dir(location.root, settings.memory.dir, source)
    refused = memory_dir_problem(memory_dir, home)
    if refused is not None:
        return ProjectInfo(location.root, None, memory_dir, refused)
    identity: ProjectIdentity | None = None
    if location.registered:
        identity = read_identity(location.root)
    elif preview:
        identity = preview_identity(location.root, home, clock=clock, hex_source=hex_source)
    elif register:
        identity = register_project(
            location.root, home, clock=clock, hex_source=hex_source, memory_dir=memory_dir
        )
    return ProjectInfo(location.root, identity, memory_dir)


def memory_dir_problem(memory_dir: Path, home: Path) -> str | None:
    """Why a project's notes folder may not be used (another user's, world-writable), if it
    exists; the user's ``projects.safeDirectories`` can vouch for it."""
    if not memory_dir.exists() and not memory_dir.is_symlink():
        return None
    real, home_real = os.path.realpath(memory_dir), os.path.realpath(home)
    return refusal(real, home_real, marker=False, role="a notes folder")


@dataclass
class _Opening:
    """What opening a workspace gathers on its way: the scopes, why others are missing, and
    the warnings for the person."""

    layout: HomeLayout
    start: Path
    memory: MemorySettings
    home_problem: str | None
    clock: Clock
    warnings: list[str]
    scopes: dict[Scope, ScopeHandle] = field(default_factory=dict)
    unavailable: dict[Scope, str] = field(default_factory=dict)
    file_clock: Clock = wall_clock_ms

    def store(self, directory: Path, scope: Scope, lock_path: Path) -> NoteStore:
        return NoteStore(
            directory,
            scope=scope,
            lock_path=lock_path,
            max_notes=self.memory.max_notes,
            wall_clock=self.file_clock,
            snapshot_path=None
            if self.home_problem is not None
            else snapshot_path(self.layout.cache_dir, scope, directory),
        )

    def add_project_scope(self, project: ProjectInfo | None) -> None:
        home = self.layout.home
        if project is None:
            self.unavailable["project"] = (
                f"{self.start} is inside OHARNESS_HOME ({home}), which is never a project; "
                "project notes are not available here: keep it as a user note (scope user), or "
                "work in a project's folder"
            )
        elif project.refused is not None:
            reason = f"project notes are not available here: {project.refused}"
            self.unavailable["project"] = reason
            self.warnings.append(reason)
        elif project.identity is None:
            self.unavailable["project"] = (
                f"no registered project at {project.root}: run 'oharness project init' there "
                "to keep project notes (a git repository registers itself), or keep it as a user "
                'note (--scope user; scope "user" in a tool)'
            )
            self.warnings.append(
                f"no registered project at {project.root}: showing user notes only "
                "('oharness project init' registers it)"
            )
        else:
            # Without a usable home the lock lives in the project's own state folder.
            lock_path = (
                self.layout.lock_path_for(project.memory_dir)
                if self.home_problem is None
                else project.root / STATE_DIR / "locks" / "notes.lock"
            )
            store = self.store(project.memory_dir, "project", lock_path)
            key = stable_scope_key("project", project.identity.id)
            self.scopes["project"] = ScopeHandle(
                store, key, self.conflicts_dir(key, store.directory)
            )

    def conflicts_dir(self, scope_key: str, directory: Path) -> Path | None:
        """Where sync records this notes folder's conflicts (none without a usable home)."""
        if self.home_problem is not None:
            return None
        return self.layout.conflicts_dir(scope_key, directory)

    def add_user_scope(self) -> BackupStore | None:
        """The user scope and the backups, both in the home (None when it is unusable)."""
        layout = self.layout
        if self.home_problem is not None:
            message = (
                f"OHARNESS_HOME ({layout.home}) cannot be used ({self.home_problem}): user "
                "notes, backups and machine-local memory state are unavailable; project notes "
                "still work"
            )
            self.warnings.append(message)
            self.unavailable["user"] = message
            return None
        folder = layout.user_memory_dir
        store = self.store(folder, "user", layout.lock_path_for(folder))
        key = stable_scope_key("user", None)
        self.scopes["user"] = ScopeHandle(store, key, self.conflicts_dir(key, folder))
        return BackupStore(layout.backups_dir, clock=self.clock)

    def backups_problem(self) -> str | None:
        if self.home_problem is None:
            return None
        return (
            f"backups need a writable OHARNESS_HOME ({self.layout.home}: {self.home_problem}); "
            "nothing that would need a backup is done until it is writable (set OHARNESS_HOME "
            "to a folder you can write)"
        )

    def recall(self) -> MemoryRecall:
        usable = self.home_problem is None
        return MemoryRecall(
            {scope: handle.store for scope, handle in self.scopes.items()},
            self.memory.recall,
            scope_keys={scope: handle.key for scope, handle in self.scopes.items()},
            conflict_dirs={
                scope: handle.conflicts
                for scope, handle in self.scopes.items()
                if handle.conflicts is not None
            },
            clock=self.clock,
            cache_dir=self.layout.cache_dir if usable else None,
            usage=UsageLog(self.layout.usage_dir, clock=self.clock) if usable else None,
        )

    def warn_unloaded(self, service: MemoryService) -> None:
        for scope in service.available_scopes():
            unloaded = service.store(scope).unloaded()
            if unloaded:
                self.warnings.append(
                    f"{len(unloaded)} {scope} notes were not loaded: the scope holds more than "
                    f"memory.maxNotes ({self.memory.max_notes}); the least recently modified "
                    "are left out"
                )
