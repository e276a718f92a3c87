"""Everything a daemon holds, and how it is built from :class:`DaemonOptions`."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from oharness.daemon.auth import DaemonAuth
from oharness.daemon.background.consolidation import DaemonConsolidation
from oharness.daemon.background.folder_watch import FolderWatch
from oharness.daemon.background.following import ProjectFollower
from oharness.daemon.background.notices import FolderNotices
from oharness.daemon.background.sync import FOLLOW_SECONDS, DaemonSync
from oharness.daemon.background.usage_writer import WINDOW_SECONDS, UsageWriter
from oharness.daemon.errors import DaemonApiError
from oharness.daemon.events import HEARTBEAT_SECONDS, QUEUE_LIMIT, Event, EventBus
from oharness.daemon.tasks.lane import LaneLimits, Task, TaskLane, TaskOutcome, TaskWork, Timeouts
from oharness.daemon.tasks.memory_tasks import Capturer, Dreamer, MemoryTasks
from oharness.daemon.workspaces import DaemonWorkspace, WorkspaceRegistry
from oharness.harness.model import ChatModel
from oharness.memory.workspace import Workspace, open_workspace, wall_clock_ms
from oharness.sync.coordinator import FOLLOW_CHECK_MS, SyncTiming
from oharness.types import Clock, Scope

if TYPE_CHECKING:
    from oharness.daemon.background.note_watch import NoteWatcher

log = logging.getLogger(__name__)


class SessionHost(Protocol):
    """What hosts chat sessions. Memory tasks never call it (spec 10.1: sessionless)."""

    def create_session(self, project_id: str) -> Any: ...

    def load_session(self, session_id: str) -> Any: ...

    def resume_session(self, session_id: str) -> Any: ...

    def prompt(self, session_id: str, text: str) -> Any: ...


WorkWrapper = Callable[[TaskWork, DaemonWorkspace], TaskWork]
#: Serves one agent's MCP session over a connection (daemon/mcp_socket.py): the workspace,
#: whether forget may skip the person's approval, the connection's two ends.
McpSessions = Callable[
    [Callable[[], Workspace], bool, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]
]
WriteListener = Callable[[DaemonWorkspace, Scope], None]


@dataclass
class DaemonOptions:
    """How a daemon is set up. Tests inject the clock, limits, timeouts and seams."""

    home: Path
    start: Path
    #: Register ``start``'s project when it is not one yet (the caller chose the folder);
    #: ``oharness serve`` sets it only for ``--project``, a registered project or a git
    #: repository. Without a project, the default workspace serves the user scope alone.
    register_start: bool = True
    clock: Clock = wall_clock_ms
    limits: LaneLimits = field(default_factory=LaneLimits)
    timeouts: Timeouts = field(default_factory=Timeouts)
    dreamer: Dreamer | None = None
    capturer: Capturer | None = None
    sessions: SessionHost | None = None
    heartbeat: float = HEARTBEAT_SECONDS
    queue_limit: int = QUEUE_LIMIT
    bind_host: str = "127.0.0.1"
    extra_hosts: tuple[str, ...] = ()
    #: Wraps each workspace's task work (instrumentation; tests hold tasks with it).
    wrap_work: WorkWrapper | None = None
    new_uuid: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))
    #: ``OHARNESS_TOKEN`` as the edge read it (for background sync).
    sync_token: str | None = None
    #: The small model: remember and forget then run through the hidden agent.
    small_model: ChatModel | None = None
    #: Background sync of every hosted folder (off in tests that do not need it).
    background_sync: bool = True
    #: How often background sync checks each folder for other machines' changes (ms), and
    #: reads the marks of the projects used on this machine (s).
    sync_check_ms: int = FOLLOW_CHECK_MS
    follow_seconds: float = FOLLOW_SECONDS
    #: How often the page's watcher looks for notes written by other processes (0: never).
    watch_seconds: float = 1.0
    #: Walk a hosted folder only when the OS notifies a change in it (False: every look).
    folder_notifications: bool = True
    #: How long recall usage counts are collected before they are written (one write each).
    usage_window: float = WINDOW_SECONDS
    #: Agents' MCP sessions relayed by ``oharness mcp`` (None: they run in-process).
    mcp_sessions: McpSessions | None = None


def extraction_event(task: Task, outcome: TaskOutcome, project_id: str | None) -> Event | None:
    """``memory_extracted`` for a capture that saved notes: the count and each note's id, scope
    and action (never its text), the agent and its session; None when nothing was saved."""
    saved = outcome.result.get("saved")
    notes = [
        {key: note.get(key) for key in ("id", "scope", "action")}
        for note in (saved if isinstance(saved, list) else [])
        if isinstance(note, dict) and isinstance(note.get("id"), str)
    ]
    if not notes:
        return None
    try:
        job = json.loads(task.payload)
    except ValueError:
        job = {}
    data: dict[str, Any] = {"count": len(notes), "notes": notes, "source": "capture"}
    if isinstance(job, dict):
        data.update({key: job.get(key) for key in ("agent", "event", "sessionId")})
    return Event(
        "memory_extracted", data, workspace=project_id, originator_client_id=task.client_id
    )


class DaemonState:
    """The daemon's parts: auth, the event bus, the workspaces."""

    def __init__(self, options: DaemonOptions, auth: DaemonAuth) -> None:
        self.options = options
        self.auth = auth
        self.bus = EventBus(queue_limit=options.queue_limit)
        self.registry = WorkspaceRegistry(self._open)
        self.write_listeners: list[WriteListener] = []
        #: Called when a workspace is used (a recall): sync checks its project notes.
        self.use_listeners: list[Callable[[DaemonWorkspace], None]] = []
        #: Called at shutdown before the workspaces drain (background sync).
        self.stoppers: list[Callable[[], None]] = []
        #: Background consolidation (spec 05.3), when a small model is configured.
        self.consolidation: DaemonConsolidation | None = None
        self.sync: DaemonSync | None = None
        #: Follows the project folders used on this machine (with background sync).
        self.follower: ProjectFollower | None = None
        #: The one thread that looks at the hosted folders (background sync, the page).
        self.folders = FolderWatch(
            notices=FolderNotices() if options.folder_notifications else None
        )
        #: The Memory page's note watcher (None until the daemon serves, or when off).
        self.note_watcher: NoteWatcher | None = None
        #: Recall usage counts, written off the request path in batches.
        self.usage = UsageWriter(options.usage_window)
        self.stoppers.append(self.usage.stop)

    def _open(self, path: Path) -> DaemonWorkspace:
        """Host the project at ``path`` (registered now if it is not yet)."""
        workspace = open_workspace(path, self.options.home, register=True, clock=self.options.clock)
        project = workspace.project
        if project is None or project.identity is None:
            workspace.close()
            reason = project.refused if project is not None and project.refused else None
            raise DaemonApiError(
                400,
                "invalid_path",
                f"{path} cannot be a workspace: "
                + (reason or "it is inside OHARNESS_HOME or not a project"),
            )
        return self._host(workspace)

    def open_default(self) -> DaemonWorkspace:
        """The default workspace: ``start``'s project, else the user scope alone."""
        options = self.options
        workspace = open_workspace(
            options.start, options.home, register=options.register_start, clock=options.clock
        )
        for warning in workspace.warnings:
            log.warning("%s", warning)
        return self.registry.add_default(self._host(workspace))

    def _host(self, workspace: Workspace) -> DaemonWorkspace:
        options = self.options
        project = workspace.project
        project_id = project.identity.id if project and project.identity else None
        root = project.root if project is not None else options.start
        holder: list[DaemonWorkspace] = []

        def wrote(scope: Scope) -> None:
            for listener in self.write_listeners:
                try:
                    listener(holder[0], scope)
                except Exception:
                    log.exception("write listener failed")

        tasks = MemoryTasks(
            workspace, dreamer=options.dreamer, notify_write=wrote, capturer=options.capturer
        )
        work: TaskWork = tasks
        if options.small_model is not None:
            from oharness.daemon.tasks.agent import MemoryAgent

            work = MemoryAgent(options.small_model, tasks)
        lane = TaskLane(
            work,
            clock=options.clock,
            publish=self._publisher(project_id),
            limits=options.limits,
            timeouts=options.timeouts,
            new_uuid=options.new_uuid,
        )
        hosted = DaemonWorkspace(project_id, root, workspace, lane, tasks)
        holder.append(hosted)
        if options.wrap_work is not None:
            lane.work = options.wrap_work(work, hosted)
        return hosted

    def _publisher(self, project_id: str | None) -> Callable[[Task, TaskOutcome], None]:
        def publish(task: Task, outcome: TaskOutcome) -> None:
            self.bus.publish(
                Event(
                    "memory_changed",
                    {
                        "scope": "managed",
                        "source": f"workspace_memory_{task.kind}",
                        "taskId": task.task_id,
                        "touchedScopes": list(outcome.touched_scopes),
                    },
                    workspace=project_id,
                    originator_client_id=task.client_id,
                )
            )
            if task.kind == "capture":
                extracted = extraction_event(task, outcome, project_id)
                if extracted is not None:
                    self.bus.publish(extracted)

        return publish

    def start_consolidation(self) -> None:
        """Background consolidation of every hosted workspace (spec 05.3), with the small
        model; nothing without one."""
        model = self.options.small_model
        if model is None:
            return
        consolidation = DaemonConsolidation(
            model, self.bus, clock=self.options.clock, token=self.options.sync_token
        )
        for hosted in self.registry.all():
            consolidation.add(hosted)
        self.registry.on_added.append(consolidation.add)
        self.registry.on_removed.append(consolidation.remove)
        self.stoppers.append(consolidation.stop)
        self.consolidation = consolidation

    def start_sync(self) -> None:
        """Background sync over every hosted folder (needs a usable home for its state)."""
        default = self.registry.default
        if not default.workspace.user_available:
            log.warning("background sync is off: OHARNESS_HOME cannot hold sync state")
            return
        options = self.options
        follower = ProjectFollower(self.registry, options.home)
        sync = DaemonSync(
            default,
            self.bus,
            clock=options.clock,
            token=options.sync_token,
            signature=self.folders.signature_now,
            timing=SyncTiming((options.sync_check_ms,), (), follow_projects=True),
            follow=follower.follow,
            follow_seconds=options.follow_seconds,
        )
        follower.folders = sync  # the other clones of hosted projects
        self.follower = follower
        self.sync = sync
        for hosted in self.registry.all():
            sync.add(hosted)
        self.registry.on_added.append(sync.add)
        self.registry.on_removed.append(sync.remove)
        self.write_listeners.append(sync.wrote)
        self.use_listeners.append(sync.used)
        self.stoppers.append(sync.stop)
        self.folders.add(sync)
        sync.start()

    def changed(self, hosted: DaemonWorkspace, scope: Scope, source: str) -> None:
        """After a request wrote notes of ``scope`` (the page, the API): wake sync for that
        scope and tell every subscriber (``memory_changed`` with ``source``)."""
        for listener in self.write_listeners:
            listener(hosted, scope)
        self.bus.publish(
            Event("memory_changed", {"scope": scope, "source": source}, workspace=hosted.project_id)
        )

    def workspace_for(self, project_id: str | None) -> DaemonWorkspace:
        if project_id is None:
            return self.registry.default
        return self.registry.get(project_id)
