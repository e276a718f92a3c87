"""The projects a daemon hosts (spec 10): the default one and any other registered project.

The project the daemon was started in is the default (plain ``/workspace/...`` paths);
without one (``oharness serve`` in a folder that is not a project) the default serves the
user scope alone. Other projects are added with ``POST /workspaces {"path": "/abs/path"}`` —
the project of that folder by the one discovery rule (spec 01.8), registered with
``"create": true`` when it is not one yet (never a folder that can never be a project, nor
another user's) — and then reached as
``/workspaces/{projectId}/...``. ``DELETE /workspaces/{projectId}`` drains a workspace: new
tasks are refused (503 ``workspace_draining``), queued and running tasks end
``workspace_removed``, then it is gone. The default workspace is removed only at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from oharness.daemon.errors import DaemonApiError
from oharness.daemon.tasks.lane import TaskLane
from oharness.daemon.tasks.memory_tasks import MemoryTasks
from oharness.errors import OHarnessError
from oharness.harness.plugin_config import read_plugins_file
from oharness.memory.workspace import Workspace
from oharness.project.identity import find_project

MEMORY_PLUGIN: str = "memory"
FileStamp = tuple[int, int, int, int] | None


def file_stamp(path: Path) -> FileStamp:
    """What changes whenever a file is written or replaced (None when it is missing)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


@dataclass
class DaemonWorkspace:
    """One hosted project: its memory, its task lane and its task work.

    ``project_id`` is None for a default workspace without a project (``oharness serve``
    started in a folder that is not one): it serves the user scope alone.
    """

    project_id: str | None
    root: Path
    workspace: Workspace
    lane: TaskLane
    tasks: MemoryTasks
    default: bool = False
    #: The last answer of the probe and the plugins.json it was read from.
    _switch: tuple[FileStamp, bool] | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        """The registry's key: the project id, or ``""`` for a default without a project."""
        return self.project_id or ""

    def memory_enabled(self) -> bool:
        """The availability probe: False when the memory plugin is switched off.

        Raises :class:`~oharness.errors.OHarnessError` when it cannot tell (a broken
        plugins.json), which the routes turn into ``*_failed``. The file is read again only
        when it changed (every recall asks).
        """
        path = self.workspace.home.plugins_file
        stamp = file_stamp(path)
        seen = self._switch
        if seen is not None and seen[0] == stamp:
            return seen[1]
        enabled = read_plugins_file(path).enabled(MEMORY_PLUGIN, default=True)
        self._switch = (stamp, enabled)
        return enabled

    def describe(self) -> dict[str, object]:
        return {
            "projectId": self.project_id,
            "root": str(self.root),
            "default": self.default,
            "pendingTasks": len(self.lane.pending()),
            "draining": self.lane.draining,
        }


WorkspaceFactory = Callable[[Path], DaemonWorkspace]
Listener = Callable[[DaemonWorkspace], None]


class WorkspaceRegistry:
    """The hosted workspaces by project id."""

    def __init__(self, factory: WorkspaceFactory) -> None:
        self._factory = factory
        self._workspaces: dict[str, DaemonWorkspace] = {}
        self._default: DaemonWorkspace | None = None
        #: Registration comes from requests and from background sync's thread.
        self._registering = threading.RLock()
        self.on_added: list[Listener] = []
        self.on_removed: list[Listener] = []

    def add_default(self, hosted: DaemonWorkspace) -> DaemonWorkspace:
        """Host the default workspace (opened by the daemon's state)."""
        hosted.default = True
        self._default = hosted
        self._workspaces[hosted.key] = hosted
        self._notify(self.on_added, hosted)
        return hosted

    @property
    def default(self) -> DaemonWorkspace:
        if self._default is None:
            raise DaemonApiError(404, "workspace_not_found", "this daemon has no default workspace")
        return self._default

    def all(self) -> list[DaemonWorkspace]:
        return list(self._workspaces.values())

    def get(self, project_id: str) -> DaemonWorkspace:
        hosted = self._workspaces.get(project_id)
        if hosted is None:
            raise DaemonApiError(
                404,
                "workspace_not_found",
                f"no workspace {project_id!r}: register it with POST /workspaces "
                '{"path": "/path/to/project"}',
            )
        return hosted

    def register(
        self, path: Path, *, home: Path, create: bool = False
    ) -> tuple[DaemonWorkspace, bool]:
        """Host the project of ``path`` (True when newly added), found by the one discovery
        rule (spec 01.8); ``create`` registers a folder that is not a project yet — never
        one that can never be a project (home, ``OHARNESS_HOME``, roots, temp, system
        folders) nor one another user owns."""
        if not path.is_absolute():
            raise DaemonApiError(400, "invalid_path", "path must be an absolute path to a folder")
        if not path.is_dir():
            raise DaemonApiError(
                400,
                "invalid_path",
                f"{path} is not a folder here: give a project folder that exists",
            )
        location = find_project(path, home)
        if location is None:
            raise DaemonApiError(
                400, "invalid_path", f"{path} is inside OHARNESS_HOME, which is never a project"
            )
        if location.refused is not None:
            raise DaemonApiError(
                400, "invalid_path", f"{path} cannot be a project: {location.refused}"
            )
        if not location.registered and not create:
            raise DaemonApiError(
                400,
                "not_a_project",
                f'{location.root} is not an oharness project yet: send "create": true to '
                "register it (or run 'oharness project init' there)",
            )
        with self._registering:
            return self._add(location.root)

    def _add(self, root: Path) -> tuple[DaemonWorkspace, bool]:
        real = root.resolve()
        for same in self._workspaces.values():
            if same.project_id is not None and same.root.resolve() == real:
                return same, False  # hosted already: no second opening of its notes
        hosted = self._factory(root)
        known = self._workspaces.get(hosted.key)
        if known is not None:
            hosted.workspace.close()
            if known.root.resolve() != hosted.root.resolve():
                raise DaemonApiError(
                    409,
                    "workspace_conflict",
                    f"project {hosted.project_id} is already hosted from {known.root}; this "
                    "daemon hosts one folder of a project (a second clone is synced in "
                    "the background all the same, once used)",
                )
            return known, False
        self._workspaces[hosted.key] = hosted
        self._notify(self.on_added, hosted)
        return hosted, True

    async def remove(self, project_id: str, *, allow_default: bool = False) -> DaemonWorkspace:
        """Drain and remove a workspace."""
        hosted = self.get(project_id)
        if hosted.default and not allow_default:
            raise DaemonApiError(
                409, "workspace_default", "the default workspace is removed only at shutdown"
            )
        await hosted.lane.drain()
        self._workspaces.pop(hosted.key, None)
        self._notify(self.on_removed, hosted)
        with contextlib.suppress(OHarnessError):
            hosted.workspace.close()
        return hosted

    async def close(self) -> None:
        """Drain every workspace (shutdown)."""
        await asyncio.gather(
            *(self.remove(pid, allow_default=True) for pid in list(self._workspaces)),
            return_exceptions=True,
        )

    @staticmethod
    def _notify(listeners: list[Listener], hosted: DaemonWorkspace) -> None:
        for listener in listeners:
            listener(hosted)
