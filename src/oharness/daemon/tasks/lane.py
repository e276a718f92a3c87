"""Sessionless memory tasks (spec 10.1): snapshots, one serial lane per workspace, limits.

A :class:`TaskLane` owns the tasks of one workspace. Tasks run one at a time in submission
order (mixed kinds included), so memory files are never written by two tasks at once. The
lane keeps at most :attr:`LaneLimits.stored` tasks (terminal ones evicted oldest first, and
any terminal task older than the TTL evicted at the next enqueue), at most
:attr:`LaneLimits.pending` queued + running, of which forget + dream share at most
:attr:`LaneLimits.maintenance`, so bursts of maintenance cannot starve remember.

The work of a task runs in a worker thread (the memory service is synchronous) and receives a
:class:`CancelToken`. At :attr:`Timeouts.work` seconds the token is set and the task fails
``<kind>_timeout``; the lane waits for the work to notice until :attr:`Timeouts.backstop`
before it starts the next task. Draining fails queued tasks ``workspace_removed``, and the
running one too, whatever its work later returns; no event is published for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

from oharness.daemon.errors import DaemonApiError, TaskFailure
from oharness.daemon.sanitize import sanitise_details
from oharness.errors import OHarnessError
from oharness.types import Clock

log = logging.getLogger(__name__)

TaskKind = Literal["remember", "forget", "dream", "capture"]
TASK_KINDS: Final[tuple[TaskKind, ...]] = ("remember", "forget", "dream", "capture")
TaskStatus = Literal["queued", "running", "completed", "failed"]
MAINTENANCE: Final = frozenset({"forget", "dream", "capture"})
TTL_MS: Final = 5 * 60_000


@dataclass(frozen=True)
class LaneLimits:
    stored: int = 1000
    pending: int = 16
    maintenance: int = 8
    ttl_ms: int = TTL_MS


@dataclass(frozen=True)
class Timeouts:
    """Seconds: the task's own work, and the lane's backstop."""

    work: float = 295.0
    backstop: float = 300.0


class CancelToken:
    """Set when a task's work must stop (timeout, drain, shutdown); checked before writes."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when cancelled (at once if already): aborts a model call."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise :class:`TaskCancelled` once cancelled."""
        if self._event.is_set():
            raise TaskCancelled("the task was cancelled")

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)


class TaskCancelled(OHarnessError):
    """A task cancelled before or while it ran (its outcome is ``cancelled``)."""

    code = "cancelled"


@dataclass(frozen=True)
class TaskOutcome:
    """What a task's work returns: the result object and the scopes it changed."""

    result: Mapping[str, Any]
    touched_scopes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.touched_scopes)


@dataclass
class Task:
    """One task and its state; :meth:`snapshot` is the wire shape."""

    kind: TaskKind
    task_id: str
    payload: str
    client_id: str | None
    created_at: int
    updated_at: int
    context_mode: str | None = None
    scope: str | None = None
    status: TaskStatus = "queued"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    cancel: CancelToken = field(default_factory=CancelToken)

    @property
    def terminal(self) -> bool:
        return self.status in ("completed", "failed")

    def snapshot(self) -> dict[str, Any]:
        data: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        if self.kind == "remember":
            data["contextMode"] = self.context_mode
        if self.scope is not None:
            data["scope"] = self.scope
        data["createdAt"] = iso_time(self.created_at)
        data["updatedAt"] = iso_time(self.updated_at)
        data["result"] = self.result
        data["error"] = self.error
        return data


def iso_time(ms: int) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z``."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskWork(Protocol):
    """Runs a task's work (in a worker thread); raises :class:`TaskFailure` to fail cleanly."""

    def __call__(self, task: Task) -> TaskOutcome: ...


Publisher = Callable[[Task, TaskOutcome], None]


class TaskLane:
    """The tasks of one workspace and the worker that runs them one at a time."""

    def __init__(
        self,
        work: TaskWork,
        *,
        clock: Clock,
        publish: Publisher,
        limits: LaneLimits | None = None,
        timeouts: Timeouts | None = None,
        new_uuid: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.work = work
        self._clock = clock
        self._publish = publish
        self.limits = limits or LaneLimits()
        self.timeouts = timeouts or Timeouts()
        self._new_uuid = new_uuid
        self._tasks: dict[str, Task] = {}  # insertion order = submission order
        self._queue: deque[Task] = deque()
        self._running: Task | None = None
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self.draining = False

    # ---- submitting and reading ------------------------------------------------------------

    def pending(self) -> list[Task]:
        """Queued and running tasks, in submission order."""
        return [task for task in self._tasks.values() if not task.terminal]

    def check_room(self, kind: TaskKind) -> None:
        """Refuse a new task when draining or at the limits (nothing is queued)."""
        if self.draining:
            raise DaemonApiError(503, "workspace_draining", "this workspace is being removed")
        pending = self.pending()
        if len(pending) >= self.limits.pending:
            raise DaemonApiError(
                429,
                "remember_queue_full",
                f"{len(pending)} memory tasks are pending (the most there can be); poll them "
                "and retry when one has finished",
            )
        if kind in MAINTENANCE:
            busy = sum(1 for task in pending if task.kind in MAINTENANCE)
            if busy >= self.limits.maintenance:
                raise DaemonApiError(
                    429,
                    "remember_queue_full",
                    f"{busy} forget/dream/capture tasks are pending (the most there can be, so "
                    "that remember keeps room); retry when one has finished",
                )

    def submit(
        self,
        kind: TaskKind,
        payload: str,
        *,
        client_id: str | None,
        context_mode: str | None = None,
        scope: str | None = None,
    ) -> Task:
        """Queue a task (call from the event loop); raises :class:`DaemonApiError` when refused."""
        self.check_room(kind)
        now = self._clock()
        self._evict(now)
        task = Task(
            kind=kind,
            task_id=f"{kind}-{self._new_uuid()}",
            payload=payload,
            client_id=client_id,
            created_at=now,
            updated_at=now,
            context_mode=context_mode if kind == "remember" else None,
            scope=scope,
        )
        self._tasks[task.task_id] = task
        self._queue.append(task)
        self._ensure_worker()
        assert self._wakeup is not None
        self._wakeup.set()
        return task

    def get(self, kind: TaskKind, task_id: str, client_id: str | None) -> Task | None:
        """A task of this kind visible to this client id (None: unknown, evicted, not theirs)."""
        task = self._tasks.get(task_id)
        if task is None or task.kind != kind or task.client_id != client_id:
            return None
        return task

    def _evict(self, now: int) -> None:
        expired = [
            task_id
            for task_id, task in self._tasks.items()
            if task.terminal and now - task.updated_at > self.limits.ttl_ms
        ]
        for task_id in expired:
            del self._tasks[task_id]
        excess = len(self._tasks) + 1 - self.limits.stored
        if excess > 0:
            oldest = sorted(
                (task for task in self._tasks.values() if task.terminal),
                key=lambda task: task.updated_at,
            )
            for task in oldest[:excess]:
                del self._tasks[task.task_id]

    # ---- running ---------------------------------------------------------------------------

    def _ensure_worker(self) -> None:
        if self._worker is None or self._worker.done():
            self._wakeup = asyncio.Event()
            self._worker = asyncio.get_running_loop().create_task(self._run_forever())

    async def _run_forever(self) -> None:
        assert self._wakeup is not None
        while True:
            while not self._queue:
                if self.draining:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
            task = self._queue.popleft()
            if task.terminal:  # failed by a drain while queued
                continue
            self._running = task
            try:
                await self._execute(task)
            finally:
                self._running = None

    async def _execute(self, task: Task) -> None:
        self._set(task, "running")
        work = asyncio.ensure_future(asyncio.to_thread(self.work, task))
        try:
            outcome = await asyncio.wait_for(asyncio.shield(work), self.timeouts.work)
        except TimeoutError:
            task.cancel.cancel()
            self._fail(
                task,
                f"{task.kind}_timeout",
                f"the {task.kind} task took longer than {self.timeouts.work:g} s and was cancelled",
            )
            rest = max(0.0, self.timeouts.backstop - self.timeouts.work)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(work), rest)
            return
        except TaskFailure as exc:
            self._fail(task, exc.code, exc.message, exc.detail)
            return
        except TaskCancelled:
            self._fail(task, "workspace_removed", "the workspace was removed")
            return
        except Exception as exc:  # the task fails cleanly; the lane goes on
            log.warning(
                "%s task %s failed: %s",
                task.kind,
                task.task_id,
                sanitise_details(f"{type(exc).__name__}: {exc}"),
            )
            self._fail(
                task,
                f"{task.kind}_failed",
                f"the {task.kind} task failed",
                f"{type(exc).__name__}: {exc}",
            )
            return
        if task.terminal:  # removed while it ran: its result is not reported
            return
        task.result = {**outcome.result, "touchedScopes": list(outcome.touched_scopes)}
        self._set(task, "completed")
        if outcome.changed:
            try:
                self._publish(task, outcome)
            except Exception:  # a failure to publish never fails the task
                log.exception("memory_changed for %s was not published", task.task_id)

    def _set(self, task: Task, status: TaskStatus) -> None:
        task.status = status
        task.updated_at = max(self._clock(), task.updated_at)

    def _fail(self, task: Task, code: str, message: str, detail: str | None = None) -> None:
        if task.terminal:
            return
        error: dict[str, Any] = {"code": code, "message": sanitise_details(message)}
        if detail:
            error["details"] = sanitise_details(detail)
        task.error = error
        self._set(task, "failed")

    # ---- draining --------------------------------------------------------------------------

    async def drain(self) -> None:
        """Refuse new tasks, fail the queued and the running one, wait for the worker to end."""
        self.draining = True
        for task in list(self._queue):
            self._fail(task, "workspace_removed", "the workspace was removed before this ran")
        self._queue.clear()
        running = self._running
        if running is not None:
            running.cancel.cancel()
            self._fail(running, "workspace_removed", "the workspace was removed while this ran")
        if self._wakeup is not None:
            self._wakeup.set()
        worker = self._worker
        if worker is not None and not worker.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(worker), self.timeouts.backstop)
