"""When sync runs (spec 07.5–07.6): one coordinator per process schedules every notes directory.

The scheduling core is a state machine over an injected clock (milliseconds): ``due()`` names
the directories that want a pass, ``next_wake()`` says when to look again and ``tick()`` runs
what is due. :class:`SyncLoop` is a thin background thread around it, woken by an event.

Rules:

- one schedule per notes directory, however many times it is registered (user notes shared by
  several open projects sync once);
- a local write is synced 3 s after the last write of a burst, at most 10 s after its first;
- a pass that finds the server at a newer version than another directory of the same scope
  last saw (a second clone of the project on this machine) — it uploaded notes, or pulled
  another machine's — makes that directory due at once: the server holds notes it lacks;
- such a pass, a write's pass and a directory's first pass go before the regular checks when
  the request budget holds passes back, so they do not queue behind every followed
  directory's check;
- otherwise a directory is checked every 60 s, backing off 60 → 120 → 240 → 300 s while passes
  change nothing on either side, then to every 15 minutes once nothing has changed for an hour
  and every 30 minutes after three hours; any change resets it to 60 s, and the use of a
  directory in that long backoff (``touch``) brings its next check within 60 s; while the
  server is older than this client a directory is checked at least every 5 minutes, so its
  upgrade is noticed soon (each such pass reads the server's protocols again);
- user notes are always checked, a project's notes only while it is in use (``touch``) and for
  30 minutes after (a write to them is still uploaded) — unless the timing follows projects:
  the daemon's (:data:`FOLLOW_TIMING`) checks every directory every 20 s, no backoff;
- a token bucket of about 20 requests a minute is shared by every directory;
- a 429 pauses every directory until its deadline; transient failures (``unavailable``,
  ``network``) are retried after 60 s; other errors wait for the next regular check;
- ``sync_now`` skips the debounce, the backoff, the cooldown and the bucket, but never the off
  switch, a 429 deadline in force or an account/origin pause (the service refuses those);
- switching off persists, cancels the requests of a pass in flight (the service's
  ``cancelled`` callable turns true) and blocks every pass until switched back on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from oharness.errors import OHarnessError, is_transient
from oharness.sync.request_budget import REQUESTS_PER_MINUTE, TokenBucket, estimate_requests
from oharness.sync.sync_service import PassReport, SyncTarget
from oharness.types import Clock

log = logging.getLogger(__name__)

WRITE_DEBOUNCE_MS = 3_000
WRITE_CAP_MS = 10_000
CHECK_INTERVALS_MS = (60_000, 120_000, 240_000, 300_000)
#: (unchanged for at least, check at most this often): the backoff of a scope idle for hours
IDLE_INTERVALS_MS = ((60 * 60_000, 15 * 60_000), (3 * 60 * 60_000, 30 * 60_000))
TRANSIENT_COOLDOWN_MS = 60_000
PROJECT_IN_USE_MS = 30 * 60_000
SWITCHED_OFF = "cloud sync is switched off ('oharness sync on')"
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SyncTiming:
    """How often directories are checked when nothing was written here.

    The default is spec 07.5's (a minute, backing off; a project only while in use). The
    daemon follows every project this machine used (:data:`FOLLOW_TIMING`).
    """

    #: The regular check's wait after 0, 1, 2, … quiet passes (the last one repeats).
    check_intervals_ms: tuple[int, ...] = CHECK_INTERVALS_MS
    #: (unchanged for at least, check at most this often): the long backoff.
    idle_intervals_ms: tuple[tuple[int, int], ...] = IDLE_INTERVALS_MS
    #: A project's notes are checked always, like user notes, not only while in use.
    follow_projects: bool = False


#: The daemon's: every followed directory checked every 20 s, so a note written on another
#: machine is here within about 30 s (a quiet check is one request).
FOLLOW_CHECK_MS = 20_000
FOLLOW_TIMING = SyncTiming((FOLLOW_CHECK_MS,), (), follow_projects=True)


class OffSwitch(Protocol):
    """The persisted on/off switch (``SyncSettingsFile``)."""

    def enabled(self) -> bool: ...

    def set_enabled(self, enabled: bool) -> None: ...


class PassRunner(Protocol):
    """What the coordinator needs of a ``SyncService``."""

    cancelled: Callable[[], bool] | None

    @property
    def settings(self) -> OffSwitch: ...

    def run(self, target: SyncTarget, *, progress: Progress | None = None) -> PassReport: ...


@dataclass
class _Schedule:
    """The timing state of one notes directory."""

    target: SyncTarget
    next_check: int
    timing: SyncTiming = field(default_factory=SyncTiming)
    registrations: int = 0
    quiet: int = 0  # consecutive passes that changed nothing
    burst_first: int | None = None
    burst_last: int | None = None
    #: Since when a pass is wanted at once: the directory was just scheduled, or the server
    #: holds notes it lacks (another directory of the scope saw a newer version than it did).
    wanted_since: int | None = None
    #: The server's version at this directory's last pass (None before one ran here).
    seen_version: int | None = None
    used_at: int | None = None
    busy: bool = False
    running: threading.Lock = field(default_factory=threading.Lock)
    #: when a pass last changed something (or the directory was scheduled)
    unchanged_since: int = -1

    def __post_init__(self) -> None:
        if self.unchanged_since < 0:
            self.unchanged_since = self.next_check

    def write_due_at(self) -> int | None:
        if self.burst_first is None or self.burst_last is None:
            return None
        return min(self.burst_last + WRITE_DEBOUNCE_MS, self.burst_first + WRITE_CAP_MS)

    def wanted_at(self) -> int | None:
        """When a pass is wanted for changes known or likely to wait: a local write (after its
        debounce), a directory just scheduled, notes another directory of the scope found on
        the server."""
        times = [time for time in (self.write_due_at(), self.wanted_since) if time is not None]
        return min(times) if times else None

    def check_due_at(self) -> int | None:
        """The regular check, when it falls while the directory is looked after."""
        if self.target.scope == "user" or self.timing.follow_projects:
            return self.next_check
        if self.used_at is not None and self.next_check < self.used_at + PROJECT_IN_USE_MS:
            return self.next_check
        return None

    def due_at(self) -> int | None:
        times = [time for time in (self.wanted_at(), self.check_due_at()) if time is not None]
        return min(times) if times else None

    def want_pass(self, now: int) -> None:
        """A pass is wanted at once (when the directory is looked after at all)."""
        if self.wanted_since is None and self.check_due_at() is not None:
            self.wanted_since = now

    def waiting(self, now: int) -> bool:
        """True when changes known to wait are due (they go before the regular checks)."""
        wanted = self.wanted_at()
        return wanted is not None and wanted <= now

    def interval(self, now: int) -> int:
        """The wait before the next regular check, from quiet passes and quiet time."""
        intervals = self.timing.check_intervals_ms
        wait = intervals[min(self.quiet, len(intervals) - 1)]
        for after, every in self.timing.idle_intervals_ms:
            if now - self.unchanged_since >= after:
                wait = max(wait, every)
        return wait

    def wake_from_idle(self, now: int) -> None:
        """The directory is in use again: leave the long backoff (next check within 60 s)."""
        intervals = self.timing.check_intervals_ms
        if self.interval(now) > intervals[-1]:
            self.quiet = 0
            self.unchanged_since = now
            self.next_check = min(self.next_check, now + intervals[0])


def directory_key(target: SyncTarget) -> Path:
    """The identity of a notes directory (one schedule each)."""
    return target.store.directory.resolve()


class SyncCoordinator:
    """Schedules every notes directory of this process (create one per process)."""

    def __init__(
        self,
        service: PassRunner,
        *,
        clock: Clock,
        requests_per_minute: int = REQUESTS_PER_MINUTE,
        counts_requests: bool = False,
        timing: SyncTiming | None = None,
    ) -> None:
        """``counts_requests``: the service calls :meth:`count_request` before each request,
        so the bucket is debited exactly instead of estimated from the pass report."""
        self.service = service
        self.clock = clock
        self.counts_requests = counts_requests
        self.timing = timing if timing is not None else SyncTiming()
        self._lock = threading.RLock()
        self._schedules: dict[Path, _Schedule] = {}
        self._bucket = TokenBucket(requests_per_minute, now=clock())
        self._rate_limited_until: int | None = None
        self._on = self._read_switch(default=True)
        self._listeners: list[Callable[[], None]] = []
        previous = service.cancelled

        def cancelled() -> bool:
            return not self._on or (previous is not None and previous())

        service.cancelled = cancelled

    # ---- directories -----------------------------------------------------------------------

    def register(self, target: SyncTarget) -> SyncTarget:
        """Schedule a directory (checked at once); returns the target it is scheduled as."""
        with self._lock:
            key = directory_key(target)
            schedule = self._schedules.get(key)
            if schedule is None:
                now = self.clock()
                schedule = _Schedule(target, now, timing=self.timing)
                schedule.want_pass(now)
                self._schedules[key] = schedule
            schedule.registrations += 1
            target = schedule.target
        self._wake()
        return target

    def unregister(self, target: SyncTarget) -> None:
        """Drop one registration; the schedule goes when the last one does."""
        with self._lock:
            key = directory_key(target)
            schedule = self._schedules.get(key)
            if schedule is not None:
                schedule.registrations -= 1
                if schedule.registrations <= 0:
                    del self._schedules[key]

    def targets(self) -> list[SyncTarget]:
        """Every scheduled directory, once each."""
        with self._lock:
            return [schedule.target for schedule in self._schedules.values()]

    def notify_write(self, target: SyncTarget, now: int | None = None) -> bool:
        """A note was written locally; False if the directory is not scheduled."""
        with self._lock:
            schedule = self._schedules.get(directory_key(target))
            if schedule is None:
                return False
            now = self.clock() if now is None else now
            if schedule.burst_first is None:
                schedule.burst_first = now
            schedule.burst_last = now
        self._wake()
        return True

    def touch(self, target: SyncTarget, now: int | None = None) -> bool:
        """The project is in use (a message sent, its Memory page open); False if unknown."""
        with self._lock:
            schedule = self._schedules.get(directory_key(target))
            if schedule is None:
                return False
            schedule.used_at = self.clock() if now is None else now
            schedule.wake_from_idle(schedule.used_at)
        self._wake()
        return True

    # ---- the off switch --------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self._on

    def cancelled(self) -> bool:
        """True while sync is switched off (the service stops before its next request)."""
        return not self._on

    def set_enabled(self, enabled: bool) -> None:
        """Switch cloud sync on or off (persisted); off cancels a pass in flight."""
        with self._lock:
            if not enabled:
                self._on = False  # first, so a pass in flight stops as soon as possible
                self.service.settings.set_enabled(False)
            else:
                self.service.settings.set_enabled(True)
                if not self._on:
                    now = self.clock()
                    for schedule in self._schedules.values():
                        schedule.next_check = min(schedule.next_check, now)
                self._on = True
        self._wake()

    def _read_switch(self, *, default: bool) -> bool:
        try:
            return self.service.settings.enabled()
        except OHarnessError:
            return default  # an unreadable config: the service reports it on the next pass

    def _refresh_switch(self) -> None:
        """Follow a switch flipped by another process (``oharness sync off``)."""
        with self._lock:
            on = self._read_switch(default=self._on)
            if on and not self._on:
                now = self.clock()
                for schedule in self._schedules.values():
                    schedule.next_check = min(schedule.next_check, now)
            self._on = on

    # ---- the 429 pause ---------------------------------------------------------------------

    def rate_limited_until(self, now: int | None = None) -> int | None:
        """The 429 deadline still in force (ms), if any."""
        now = self.clock() if now is None else now
        deadline = self._rate_limited_until
        return deadline if deadline is not None and deadline > now else None

    def blocked(self, now: int | None = None) -> str | None:
        """Why no pass may run now (switched off, or too frequent), or None."""
        if not self._on:
            return SWITCHED_OFF
        deadline = self.rate_limited_until(now)
        if deadline is not None:
            now = self.clock() if now is None else now
            seconds = -(-(deadline - now) // 1000)
            return f"sync was too frequent; it will be retried in {seconds} s"
        return None

    # ---- scheduling ------------------------------------------------------------------------

    def due(self, now: int | None = None) -> list[SyncTarget]:
        """Directories that want a pass now, earliest first (the bucket is not considered)."""
        now = self.clock() if now is None else now
        with self._lock:
            if self.blocked(now) is not None:
                return []
            return [schedule.target for schedule in self._due_schedules(now)]

    def _due_schedules(self, now: int) -> list[_Schedule]:
        """Due directories: those with changes known to wait first, then the regular checks,
        each group earliest first (with the request budget short, a write or a clone's upload
        is not queued behind every other directory's check)."""
        timed = [
            (not schedule.waiting(now), due_at, schedule)
            for schedule in self._schedules.values()
            if not schedule.busy and (due_at := schedule.due_at()) is not None and due_at <= now
        ]
        return [schedule for *_, schedule in sorted(timed, key=lambda item: item[:2])]

    def next_wake(self, now: int | None = None) -> int | None:
        """When something may become due (ms); None when only an outside event can change it."""
        now = self.clock() if now is None else now
        with self._lock:
            if not self._on:
                return None
            times = [
                due_at
                for schedule in self._schedules.values()
                if not schedule.busy and (due_at := schedule.due_at()) is not None
            ]
            if not times:
                return None
            wake = max(min(times), now)
            deadline = self.rate_limited_until(now)
            if deadline is not None:
                wake = max(wake, deadline)
            return max(wake, self._bucket.ready_at(wake))

    def tick(self, now: int | None = None, progress: Progress | None = None) -> list[PassReport]:
        """Run every due pass the request budget allows; returns their reports."""
        self._refresh_switch()
        now = self.clock() if now is None else now
        reports: list[PassReport] = []
        for target in self.due(now):
            with self._lock:
                schedule = self._schedules.get(directory_key(target))
                if (
                    schedule is None
                    or self.blocked(now) is not None  # switched off, or a 429 just now
                    or self._bucket.tokens(now) < 1
                ):
                    break
                if not schedule.running.acquire(blocking=False):
                    continue  # a manual pass is running it
            try:
                reports.append(self._pass(schedule, now, progress))
            finally:
                schedule.running.release()
        return reports

    def sync_now(
        self, target: SyncTarget | None = None, progress: Progress | None = None
    ) -> list[PassReport]:
        """Run at once for one directory or all, unless switched off or under a 429 deadline."""
        self._refresh_switch()
        with self._lock:
            if target is None:
                schedules = list(self._schedules.values())
            else:
                found = self._schedules.get(directory_key(target))
                schedules = [
                    found
                    if found is not None
                    else _Schedule(target, self.clock(), timing=self.timing)
                ]
        reports: list[PassReport] = []
        for schedule in schedules:
            now = self.clock()
            refusal = self._refusal(schedule.target, now)
            if refusal is not None:
                reports.append(refusal)
                continue
            with schedule.running:  # after a pass already in flight on this directory
                reports.append(self._pass(schedule, self.clock(), progress))
        return reports

    def _refusal(self, target: SyncTarget, now: int) -> PassReport | None:
        reason = self.blocked(now)
        if reason is None:
            return None
        return PassReport(target, paused=reason, retry_after_ms=self.rate_limited_until(now))

    # ---- one pass --------------------------------------------------------------------------

    def count_request(self) -> None:
        """One request is about to be sent (wired when ``counts_requests``)."""
        with self._lock:
            self._bucket.take(1, self.clock())

    def _pass(self, schedule: _Schedule, now: int, progress: Progress | None) -> PassReport:
        with self._lock:
            schedule.busy = True
            # The pass reads the directory fresh; writes from now on start a new burst.
            schedule.burst_first = schedule.burst_last = None
            schedule.wanted_since = None
        target = schedule.target
        try:
            report = self.service.run(target, progress=progress)
        except OHarnessError as exc:
            report = PassReport(target, error={"code": exc.code, "message": exc.message})
        except BaseException:
            with self._lock:  # unexpected: try again at the next regular check
                schedule.busy = False
                later = max(now, self.clock())
                schedule.next_check = later + schedule.interval(later)
            raise
        with self._lock:
            schedule.busy = False
            later = max(now, self.clock())
            self._settle(schedule, report, later)
            others = self._mark_others_behind(schedule, report, later)
        if others:
            self._wake()
        return report

    def _mark_others_behind(self, schedule: _Schedule, report: PassReport, now: int) -> bool:
        """The other directories of the scope (the project's other clones on this machine)
        that last saw an older version than this pass are due at once; True when any is."""
        version = report.result.version if report.result is not None else None
        if version is None:
            return False
        schedule.seen_version = version
        behind = [
            other
            for other in self._schedules.values()
            if other is not schedule
            and other.target.scope_key == schedule.target.scope_key
            and other.seen_version is not None
            and other.seen_version < version
        ]
        for other in behind:
            other.want_pass(now)
        return bool(behind)

    def _settle(self, schedule: _Schedule, report: PassReport, now: int) -> None:
        """Debit the bucket and plan the directory's next check from a pass report."""
        if not self.counts_requests:
            self._bucket.take(estimate_requests(report), now)
        deadline = report.retry_after_ms
        if deadline is not None and deadline > now:
            self._rate_limited_until = max(self._rate_limited_until or 0, deadline)
            schedule.next_check = deadline
            return
        # A pass cancelled by the switch needs nothing here: switching on makes every
        # directory due at once.
        code = report.error.get("code") if report.error is not None else None
        if is_transient(code):
            schedule.next_check = now + TRANSIENT_COOLDOWN_MS
        elif code is not None:
            schedule.next_check = now + schedule.interval(now)
        else:
            result = report.result
            if result is not None and result.changed_anything:
                schedule.quiet = 0
                schedule.unchanged_since = now
            elif result is None or result.skipped is None:
                schedule.quiet += 1  # nothing changed (or paused until the user acts)
            schedule.next_check = now + schedule.interval(now)
        if report.old_server:  # notice the server's upgrade within minutes, not hours
            schedule.next_check = min(schedule.next_check, now + CHECK_INTERVALS_MS[-1])

    # ---- waking a loop ---------------------------------------------------------------------

    def add_listener(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` whenever the schedule changes from outside (writes, switch, …)."""
        with self._lock:
            self._listeners.append(wake)

    def _wake(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for wake in listeners:
            wake()


class SyncLoop:
    """Runs a coordinator's ``tick`` on a background thread until stopped."""

    def __init__(
        self,
        coordinator: SyncCoordinator,
        *,
        on_report: Callable[[PassReport], None] | None = None,
        event: threading.Event | None = None,
        max_wait_ms: int = 60_000,
    ) -> None:
        self.coordinator = coordinator
        self.on_report = on_report
        self.max_wait_ms = max_wait_ms
        self._event = event if event is not None else threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        coordinator.add_listener(self._event.set)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the thread (once)."""
        if self._thread is not None:
            raise RuntimeError("the sync loop was already started")
        self._thread = threading.Thread(target=self._run, name="oharness-sync", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Look at the schedule now."""
        self._event.set()

    def stop(self, timeout: float | None = 30.0) -> bool:
        """Stop after the pass in flight, if any; True once the thread has ended."""
        self._stopping = True
        self._event.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while not self._stopping:
            self._event.clear()  # before looking, so a wake-up during the tick is kept
            try:
                reports = self.coordinator.tick()
            except Exception:  # the loop must outlive one bad pass
                log.exception("sync pass failed")
                reports = []
            for report in reports:
                if self.on_report is not None:
                    try:
                        self.on_report(report)
                    except Exception:
                        log.exception("sync report listener failed")
            if self._stopping:
                break
            wake = self.coordinator.next_wake()
            wait = self.max_wait_ms
            if wake is not None:
                wait = min(wait, max(0, wake - self.coordinator.clock()))
            self._event.wait(wait / 1000)
