"""When sync runs (spec 07.5–07.6): the coordinator driven by a clock that only moves when told."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pytest

from oharness.notes.backups import BackupStore
from oharness.notes.store import NoteStore
from oharness.project.paths import HomeLayout
from oharness.sync.coordinator import (
    FOLLOW_TIMING,
    SyncCoordinator,
    SyncLoop,
)
from oharness.sync.request_budget import TokenBucket, estimate_requests
from oharness.sync.scope_sync import PassResult
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import PassReport, SyncService, SyncTarget
from oharness.types import Scope

START = 1_789_000_000_000
SECOND = 1_000
MINUTE = 60_000


class Clock:
    """Milliseconds; moves only when told."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms

    def to(self, ms: int) -> None:
        self.now = ms


class Switch:
    def __init__(self) -> None:
        self.on = True
        self.written: list[bool] = []

    def enabled(self) -> bool:
        return self.on

    def set_enabled(self, enabled: bool) -> None:
        self.on = enabled
        self.written.append(enabled)


Reply = Callable[[SyncTarget], PassReport]


class FakeService:
    """Answers ``run`` with scripted reports (quiet passes once the script is used up)."""

    def __init__(self) -> None:
        self.settings = Switch()
        self.cancelled: Callable[[], bool] | None = None
        self.calls: list[SyncTarget] = []
        self.script: deque[Reply] = deque()
        self.during: Callable[[SyncTarget], object] | None = None

    def run(
        self,
        target: SyncTarget,
        *,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> PassReport:
        self.calls.append(target)
        if self.during is not None:
            self.during(target)
        if self.script:
            return self.script.popleft()(target)
        return quiet(target)

    def then(self, *replies: Reply) -> None:
        self.script.extend(replies)


def quiet(target: SyncTarget) -> PassReport:
    return PassReport(target, result=PassResult())


def changed(target: SyncTarget) -> PassReport:
    return PassReport(target, result=PassResult(pulled=["n1"], changed_anything=True))


def failing(code: str) -> Reply:
    return lambda target: PassReport(target, error={"code": code, "message": code})


def rate_limited(deadline: int) -> Reply:
    return lambda target: PassReport(
        target,
        error={"code": "rate_limited", "message": "sync was too frequent"},
        retry_after_ms=deadline,
    )


def make_target(tmp_path: Path, name: str, scope: Scope = "user") -> SyncTarget:
    directory = tmp_path / name
    directory.mkdir(exist_ok=True)
    store = NoteStore(directory, scope=scope, lock_path=tmp_path / f"{name}.lock")
    project = None if scope == "user" else name
    return SyncTarget(scope, f"{scope}:{name}", store, project_id=project)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service() -> FakeService:
    return FakeService()


@pytest.fixture
def coordinator(service: FakeService, clock: Clock) -> SyncCoordinator:
    return SyncCoordinator(service, clock=clock)


@pytest.fixture
def user(tmp_path: Path) -> SyncTarget:
    return make_target(tmp_path, "user")


@pytest.fixture
def project(tmp_path: Path) -> SyncTarget:
    return make_target(tmp_path, "project", "project")


def passes_between(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, start: int, end: int
) -> list[int]:
    """Tick at every second from ``start`` to ``end`` (ms offsets); the offsets where a pass ran."""
    ran: list[int] = []
    for offset in range(start, end + 1, SECOND):
        clock.to(START + offset)
        before = len(service.calls)
        coordinator.tick()
        if len(service.calls) > before:
            ran.append(offset)
    return ran


# ---- one schedule per directory ------------------------------------------------------------


def test_a_directory_registered_twice_has_one_schedule(
    coordinator: SyncCoordinator, service: FakeService, tmp_path: Path
) -> None:
    first = make_target(tmp_path, "user")
    # The same user notes, opened again through another project's session.
    again = SyncTarget(
        "user",
        "user:user",
        NoteStore(tmp_path / "user", scope="user", lock_path=tmp_path / "other.lock"),
    )
    assert coordinator.register(first) is first
    assert coordinator.register(again) is first
    assert coordinator.targets() == [first]
    coordinator.tick()
    assert service.calls == [first]
    coordinator.unregister(again)
    assert coordinator.targets() == [first]  # the other project still uses it
    coordinator.unregister(first)
    assert coordinator.targets() == []


def test_writes_to_either_registration_feed_the_one_schedule(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    first = make_target(tmp_path, "user")
    again = SyncTarget("user", "user:user", first.store)
    coordinator.register(first)
    coordinator.register(again)
    coordinator.tick()
    coordinator.notify_write(first)
    coordinator.notify_write(again)
    assert passes_between(coordinator, service, clock, 1 * SECOND, 5 * SECOND) == [3 * SECOND]


def test_an_unregistered_directory_is_not_scheduled(
    coordinator: SyncCoordinator, user: SyncTarget
) -> None:
    assert coordinator.notify_write(user) is False
    assert coordinator.touch(user) is False
    assert coordinator.due() == []
    assert coordinator.next_wake() is None


# ---- local writes -----------------------------------------------------------------------------


def test_a_write_is_synced_three_seconds_later(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    coordinator.tick()  # the check at registration
    clock.advance(10 * SECOND)
    coordinator.notify_write(user)
    assert coordinator.next_wake() == clock() + 3 * SECOND
    assert passes_between(coordinator, service, clock, 10 * SECOND, 20 * SECOND) == [13 * SECOND]


def test_a_burst_of_writes_is_one_pass_after_the_last(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    coordinator.tick()
    for offset in (10, 11, 12, 14):
        clock.to(START + offset * SECOND)
        coordinator.notify_write(user)
        assert coordinator.due() == []
    assert passes_between(coordinator, service, clock, 14 * SECOND, 30 * SECOND) == [17 * SECOND]
    assert len(service.calls) == 2


def test_a_long_burst_is_synced_ten_seconds_after_its_first_write(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    coordinator.tick()
    ran: list[int] = []
    for offset in range(10 * SECOND, 40 * SECOND, SECOND):
        clock.to(START + offset)
        if offset % (2 * SECOND) == 0:
            coordinator.notify_write(user)  # every 2 s: the debounce alone would never fire
        before = len(service.calls)
        coordinator.tick()
        if len(service.calls) > before:
            ran.append(offset)
    # First write at 10 s: capped at 20 s; the next burst starts at 22 s: 32 s.
    assert ran == [20 * SECOND, 32 * SECOND]


def test_a_write_during_a_pass_is_synced_by_another_pass(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    service.during = lambda target: coordinator.notify_write(target)
    coordinator.tick()
    service.during = None
    assert passes_between(coordinator, service, clock, SECOND, 5 * SECOND) == [3 * SECOND]


# ---- regular checks and their backoff ----------------------------------------------------------


def test_checks_back_off_while_nothing_changes_and_reset_on_a_change(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    service.then(changed, quiet, quiet, quiet, quiet, quiet, changed, quiet)
    coordinator.register(user)
    gaps: list[int] = []
    previous = clock()
    coordinator.tick()
    for _ in range(7):
        wake = coordinator.next_wake()
        assert wake is not None
        clock.to(wake - 1)
        assert coordinator.tick() == []  # not a millisecond early
        clock.to(wake)
        assert len(coordinator.tick()) == 1
        gaps.append((wake - previous) // SECOND)
        previous = wake
    # after a change 60 s; after quiet passes 120, 240, 300, 300, 300; after a change 60 s
    assert gaps == [60, 120, 240, 300, 300, 300, 60]


def test_a_paused_scope_backs_off_like_a_quiet_one(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    # An account or origin pause: nothing changes until the user acts.
    def paused(target: SyncTarget) -> PassReport:
        return PassReport(target, paused="bound to another account")

    service.then(paused, paused)
    coordinator.register(user)
    coordinator.tick()
    assert coordinator.next_wake() == START + 120 * SECOND
    clock.to(START + 120 * SECOND)
    coordinator.tick()
    assert coordinator.next_wake() == START + 360 * SECOND


# ---- which directories are checked --------------------------------------------------------


def test_user_notes_are_always_checked(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    ran = passes_between(coordinator, service, clock, 0, 60 * MINUTE)
    assert len(ran) > 10
    assert max(b - a for a, b in itertools.pairwise(ran)) == 300 * SECOND


HOUR = 60 * MINUTE


def idle_gaps(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, end: int
) -> list[tuple[int, int]]:
    """(minutes since the start, minutes since the previous pass) of every pass until ``end``."""
    ran = passes_between(coordinator, service, clock, 0, end)
    return [(b // MINUTE, (b - a) // MINUTE) for a, b in itertools.pairwise(ran)]


def test_a_scope_unchanged_for_hours_is_checked_every_fifteen_then_thirty_minutes(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    gaps = idle_gaps(coordinator, service, clock, 6 * HOUR)
    assert {gap for at, gap in gaps if at < 60} == {2, 4, 5}
    assert {gap for at, gap in gaps if 80 <= at <= 180} == {15}
    assert {gap for at, gap in gaps if at > 200} == {30}
    assert len(gaps) < 12 + 8 + 6 + 2  # vs 72 checks at every 5 minutes


def test_a_scope_on_an_older_server_is_checked_every_five_minutes_however_idle(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    # Paused with "upgrade the server first": each pass reads the server's protocols, so the
    # upgrade is noticed within five minutes, never after the long backoff of an idle scope.
    def old_server(target: SyncTarget) -> PassReport:
        return PassReport(target, paused="upgrade the server first", old_server=True)

    service.then(*[old_server] * 200)
    coordinator.register(user)
    gaps = idle_gaps(coordinator, service, clock, 6 * HOUR)
    assert max(gap for _, gap in gaps) == 5 and len(gaps) > 60
    assert estimate_requests(old_server(user)) == 1


def test_a_change_found_by_a_check_brings_back_one_minute_checks(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    last = passes_between(coordinator, service, clock, 0, 4 * HOUR)[-1]
    wake = coordinator.next_wake()
    assert wake is not None and wake - (START + last) == 30 * MINUTE
    clock.to(wake)
    service.then(changed)  # another machine changed something
    coordinator.tick()
    assert coordinator.next_wake() == wake + MINUTE


def test_a_local_write_in_the_long_backoff_is_synced_three_seconds_later(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    passes_between(coordinator, service, clock, 0, 4 * HOUR)
    clock.advance(5 * SECOND)
    before = len(service.calls)
    coordinator.notify_write(user)
    clock.advance(3 * SECOND)
    coordinator.tick()
    assert len(service.calls) == before + 1
    # Nothing uploaded (the fake's pass changed nothing): the long backoff stays.
    assert coordinator.next_wake() == clock() + 30 * MINUTE
    service.then(changed)
    coordinator.notify_write(user)
    clock.advance(3 * SECOND)
    coordinator.tick()  # the write uploaded: checks are one minute apart again
    assert coordinator.next_wake() == clock() + MINUTE


def test_sync_now_in_the_long_backoff_runs_at_once(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    passes_between(coordinator, service, clock, 0, 4 * HOUR)
    before = len(service.calls)
    clock.advance(MINUTE)
    coordinator.sync_now(user)
    assert len(service.calls) == before + 1


def test_using_a_directory_in_the_long_backoff_checks_it_within_a_minute(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    passes_between(coordinator, service, clock, 0, 4 * HOUR)
    clock.advance(MINUTE)
    coordinator.touch(user)
    wake = coordinator.next_wake()
    assert wake is not None and wake <= clock() + MINUTE
    clock.to(wake)
    coordinator.tick()
    assert coordinator.next_wake() == clock() + 2 * MINUTE  # the short backoff again


def test_a_project_is_checked_only_while_in_use_and_thirty_minutes_after(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, project: SyncTarget
) -> None:
    coordinator.register(project)
    assert coordinator.due() == []
    assert passes_between(coordinator, service, clock, 0, 10 * MINUTE) == []
    coordinator.touch(project)  # a message sent in it: checked at once
    ran = passes_between(coordinator, service, clock, 10 * MINUTE, 2 * 60 * MINUTE)
    assert ran[0] == 10 * MINUTE
    assert ran[-1] < 40 * MINUTE <= ran[-1] + 300 * SECOND
    assert coordinator.next_wake() is None
    clock.to(START + 2 * 60 * MINUTE)
    coordinator.touch(project)  # its Memory page opened again
    assert coordinator.due() == [project]


def test_the_daemons_timing_follows_a_project_every_20_s_never_in_use_or_backing_off(
    service: FakeService, clock: Clock, project: SyncTarget
) -> None:
    coordinator = SyncCoordinator(service, clock=clock, timing=FOLLOW_TIMING)
    coordinator.register(project)  # never touched
    ran = passes_between(coordinator, service, clock, 0, 3 * 60 * MINUTE)
    assert ran[:3] == [0, 20 * SECOND, 40 * SECOND]
    assert {later - earlier for earlier, later in itertools.pairwise(ran)} == {20 * SECOND}


def test_touching_a_project_in_use_does_not_add_passes(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, project: SyncTarget
) -> None:
    coordinator.register(project)
    coordinator.touch(project)
    coordinator.tick()
    clock.advance(10 * SECOND)
    coordinator.touch(project)
    assert coordinator.due() == []


def test_a_write_to_an_idle_project_is_still_uploaded(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, project: SyncTarget
) -> None:
    coordinator.register(project)
    coordinator.notify_write(project)
    assert passes_between(coordinator, service, clock, 0, 2 * MINUTE) == [3 * SECOND]


# ---- the request budget --------------------------------------------------------------------


def test_every_directory_shares_twenty_requests_a_minute(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    targets = [make_target(tmp_path, f"user{index}") for index in range(30)]
    for target in targets:
        coordinator.register(target)
    assert len(coordinator.due()) == 30
    assert len(coordinator.tick()) == 20
    assert len(coordinator.due()) == 10
    assert coordinator.next_wake() == START + 3 * SECOND  # one request every three seconds
    clock.advance(3 * SECOND - 1)
    assert coordinator.tick() == []
    clock.advance(1)
    assert len(coordinator.tick()) == 1
    clock.advance(MINUTE)
    assert len(coordinator.tick()) == 9
    assert len({target.store.directory for target in service.calls}) == 30


def test_a_busy_pass_costs_its_requests(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    targets = [make_target(tmp_path, f"user{index}") for index in range(20)]

    def busy(target: SyncTarget) -> PassReport:
        result = PassResult(pushed=["a", "b"], pulled=["c"], changed_anything=True)
        return PassReport(target, result=result)

    service.then(*[busy] * 20)
    for target in targets:
        coordinator.register(target)
    # Snapshot, bodies and a commit: three requests each, so seven passes use the minute.
    assert len(coordinator.tick()) == 7


def _budget_spent(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    """30 more followed user directories, each checked once, then the budget spent and every
    one overdue (the daemon's state with many folders)."""
    directories = {make_target(tmp_path, f"user{index}").store.directory for index in range(30)}
    for directory in sorted(directories):
        coordinator.register(make_target(tmp_path, directory.name))
    while not directories <= {target.store.directory for target in service.calls}:
        coordinator.tick()
        clock.advance(SECOND)
    clock.advance(30 * SECOND)
    coordinator.tick()
    assert len(coordinator.due()) > 10


def test_a_write_goes_before_the_overdue_checks_when_the_budget_is_short(
    service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    coordinator = SyncCoordinator(service, clock=clock, timing=FOLLOW_TIMING)
    _budget_spent(coordinator, service, clock, tmp_path)
    written = service.calls[-1]  # checked just now: its next check is 20 s away
    coordinator.notify_write(written)
    clock.advance(3 * SECOND)
    assert coordinator.due()[0].store.directory == written.store.directory
    service.calls.clear()
    coordinator.tick()
    assert service.calls[0].store.directory == written.store.directory


def test_a_directory_scheduled_while_the_budget_is_short_goes_first(
    service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    coordinator = SyncCoordinator(service, clock=clock, timing=FOLLOW_TIMING)
    _budget_spent(coordinator, service, clock, tmp_path)
    new = make_target(tmp_path, "clone", "project")
    coordinator.register(new)
    assert coordinator.due()[0] is new


def test_a_pass_that_finds_a_newer_version_makes_the_other_clones_due_at_once(
    service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    """Two folders of one project here (two clones): a pass of one that uploads (or pulls)
    brings the server past what the other saw, so the other is synced next, before the
    overdue checks; a pass that found the version the other saw changes nothing."""
    coordinator = SyncCoordinator(service, clock=clock, timing=FOLLOW_TIMING)
    first, second = (make_target(tmp_path, name, "project") for name in ("one", "two"))
    second = SyncTarget("project", first.scope_key, second.store, project_id="one")

    def at(version: int, pushed: tuple[str, ...] = (), pulled: tuple[str, ...] = ()) -> Reply:
        result = PassResult(
            version=version,
            changed_anything=bool(pushed or pulled),
            pushed=list(pushed),
            pulled=list(pulled),
        )
        return lambda target: PassReport(target, result=result)

    service.then(at(4), at(4))
    coordinator.register(first)
    coordinator.register(second)
    coordinator.tick()  # both at version 4
    _budget_spent(coordinator, service, clock, tmp_path)
    service.then(at(4))
    coordinator.sync_now(second)  # nothing new: the first one is not wanted
    assert coordinator.due()[0].store.directory != first.store.directory
    service.then(at(5, pushed=("n1",)))
    coordinator.sync_now(second)  # uploaded: version 5
    assert coordinator.due()[0] is first
    service.calls.clear()
    service.then(at(5, pulled=("n1",)))
    clock.to(coordinator.next_wake() or 0)  # the budget's next request
    coordinator.tick()
    assert service.calls == [first]
    assert second not in coordinator.due()[:1]  # the first one's pull saw version 5 too


def test_request_estimates() -> None:
    target = SyncTarget(
        "user",
        "user",
        NoteStore(Path("/nonexistent"), scope="user", lock_path=Path("/nonexistent.lock")),
    )
    assert estimate_requests(PassReport(target, paused="switched off")) == 0
    # An encrypted account without the key here: the server's refusal was a request.
    locked = PassReport(target, paused="encrypted: …", paused_by_server=True)
    assert estimate_requests(locked) == 1
    assert estimate_requests(PassReport(target, error={"code": "not_logged_in"})) == 0
    assert estimate_requests(PassReport(target, error={"code": "network"})) == 1
    assert estimate_requests(PassReport(target, result=PassResult(skipped="locked"))) == 0
    assert estimate_requests(PassReport(target, result=PassResult())) == 1
    pushed = PassResult(pushed=[str(n) for n in range(501)], pulled=["x"])
    assert estimate_requests(PassReport(target, result=pushed)) == 4  # two commits
    waiting = PassResult(conflicts=["n1"])  # a conflict left from an earlier pass
    assert estimate_requests(PassReport(target, result=waiting)) == 1
    met = PassResult(conflicts=["n1"], changed_anything=True)  # its cloud body fetched now
    assert estimate_requests(PassReport(target, result=met)) == 2


def test_counted_requests_replace_the_estimate(
    service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator = SyncCoordinator(service, clock=clock, counts_requests=True)

    def many_requests(target: SyncTarget) -> None:
        for _ in range(21):
            coordinator.count_request()

    service.during = many_requests
    coordinator.register(user)
    coordinator.tick()  # a quiet pass, estimated at one request, that counted 21
    service.during = None
    coordinator.notify_write(user)
    clock.advance(3 * SECOND)
    assert coordinator.due() == [user]
    assert coordinator.tick() == []  # the budget is one request in debt
    assert coordinator.next_wake() == START + 6 * SECOND
    clock.to(START + 6 * SECOND)
    assert len(coordinator.tick()) == 1


def test_token_bucket_refills_exactly() -> None:
    bucket = TokenBucket(20, now=0)
    bucket.take(21, now=0)
    assert bucket.tokens(0) == -1
    assert bucket.ready_at(0) == 6_000
    assert bucket.tokens(5_999) < 1 <= bucket.tokens(6_000)
    assert bucket.tokens(10 * MINUTE) == 20  # never more than a minute's worth


# ---- 429: every directory waits ----------------------------------------------------------


def test_a_429_pauses_every_directory_until_its_deadline(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    first, second = make_target(tmp_path, "user"), make_target(tmp_path, "user2")
    deadline = START + 90 * SECOND
    service.then(rate_limited(deadline))
    coordinator.register(first)
    coordinator.register(second)
    reports = coordinator.tick()
    assert len(reports) == 1  # the other directory did not try
    assert coordinator.due() == []
    assert coordinator.rate_limited_until() == deadline
    reason = coordinator.blocked()
    assert reason is not None
    assert "too frequent" in reason
    assert "retried in 90 s" in reason
    coordinator.notify_write(second)  # a write does not jump the deadline
    assert coordinator.next_wake() == deadline
    assert passes_between(coordinator, service, clock, 0, 89 * SECOND) == []
    clock.to(deadline)
    assert {report.target.store.directory for report in coordinator.tick()} == {
        first.store.directory,
        second.store.directory,
    }
    assert coordinator.blocked() is None


def test_a_persisted_deadline_seen_after_a_restart_pauses_every_directory(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    deadline = START + 40 * SECOND
    service.then(
        lambda target: PassReport(target, paused="sync was too frequent", retry_after_ms=deadline)
    )
    coordinator.register(make_target(tmp_path, "user"))
    coordinator.register(make_target(tmp_path, "user2"))
    assert len(coordinator.tick()) == 1
    assert coordinator.next_wake() == deadline


# ---- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["unavailable", "network"])
def test_a_transient_failure_is_retried_after_a_minute(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget, code: str
) -> None:
    service.then(quiet, quiet, quiet, quiet, failing(code))
    coordinator.register(user)
    coordinator.tick()
    for _ in range(4):  # backed off to 300 s, then the failure
        wake = coordinator.next_wake()
        assert wake is not None
        clock.to(wake)
        coordinator.tick()
    failed_at = clock()
    assert coordinator.next_wake() == failed_at + 60 * SECOND


def test_other_errors_wait_for_the_next_regular_check(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    service.then(quiet, failing("not_logged_in"), failing("invalid_response"))
    coordinator.register(user)
    coordinator.tick()
    clock.advance(120 * SECOND)
    coordinator.tick()
    assert coordinator.next_wake() == clock() + 120 * SECOND
    clock.advance(120 * SECOND)
    coordinator.tick()
    assert coordinator.next_wake() == clock() + 120 * SECOND


# ---- sync now ----------------------------------------------------------------------------------


def test_sync_now_skips_debounce_backoff_and_cooldown(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    service.then(quiet, failing("network"))
    coordinator.register(user)
    coordinator.tick()
    clock.advance(10 * SECOND)  # backed off to 120 s, and a write not yet debounced
    coordinator.notify_write(user)
    assert [report.result for report in coordinator.sync_now(user)] == [None]  # ran: network
    assert len(service.calls) == 2
    clock.advance(SECOND)  # inside the transient cooldown
    reports = coordinator.sync_now(user)
    assert len(service.calls) == 3
    assert reports[0].result is not None
    # The write went with the manual pass: no extra pass three seconds later.
    assert passes_between(coordinator, service, clock, 11 * SECOND, 20 * SECOND) == []


def test_sync_now_runs_every_directory_even_idle_projects_and_an_empty_budget(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, tmp_path: Path
) -> None:
    targets = [make_target(tmp_path, f"user{index}") for index in range(20)]
    idle = make_target(tmp_path, "project", "project")
    for target in [*targets, idle]:
        coordinator.register(target)
    coordinator.tick()  # uses the whole budget
    assert len(coordinator.sync_now()) == 21
    assert service.calls[-1] is idle


def test_sync_now_passes_an_account_pause_through(
    coordinator: SyncCoordinator, service: FakeService, user: SyncTarget
) -> None:
    service.then(lambda target: PassReport(target, paused="bound to another account"))
    coordinator.register(user)
    [report] = coordinator.sync_now(user)
    assert report.paused == "bound to another account"


def test_sync_now_waits_for_a_429_deadline_and_says_when(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    deadline = START + 45 * SECOND
    service.then(rate_limited(deadline))
    coordinator.register(user)
    coordinator.tick()
    clock.advance(15 * SECOND)
    [report] = coordinator.sync_now(user)
    assert len(service.calls) == 1
    assert report.retry_after_ms == deadline
    assert report.paused is not None
    assert "too frequent" in report.paused
    assert "30 s" in report.paused
    clock.to(deadline)
    [report] = coordinator.sync_now(user)
    assert report.result is not None
    assert len(service.calls) == 2


def test_sync_now_is_refused_while_switched_off(
    coordinator: SyncCoordinator, service: FakeService, user: SyncTarget
) -> None:
    coordinator.register(user)
    coordinator.set_enabled(False)
    [report] = coordinator.sync_now(user)
    assert service.calls == []
    assert report.paused is not None
    assert "switched off" in report.paused
    assert report.retry_after_ms is None


# ---- the off switch ----------------------------------------------------------------------------


def test_switching_off_cancels_the_pass_in_flight_and_blocks_everything(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    seen: list[bool] = []

    def switch_off_mid_pass(target: SyncTarget) -> None:
        assert service.cancelled is not None
        seen.append(service.cancelled())
        coordinator.set_enabled(False)  # from another thread, in real life
        seen.append(service.cancelled())

    service.during = switch_off_mid_pass
    service.then(failing("cancelled"))
    coordinator.register(user)
    coordinator.tick()
    assert seen == [False, True]
    assert service.settings.written == [False]  # persisted
    service.during = None
    coordinator.notify_write(user)
    assert passes_between(coordinator, service, clock, 0, 30 * MINUTE) == []
    assert coordinator.next_wake() is None
    assert coordinator.blocked() is not None

    coordinator.set_enabled(True)
    assert service.cancelled is not None
    assert service.cancelled() is False
    assert service.settings.written == [False, True]
    assert coordinator.due() == [user]
    assert len(coordinator.tick()) == 1


def test_a_switch_flipped_by_another_process_is_followed(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    coordinator.register(user)
    service.settings.on = False  # 'oharness sync off' elsewhere
    assert coordinator.tick() == []
    assert coordinator.enabled is False
    assert coordinator.cancelled() is True
    service.settings.on = True
    clock.advance(SECOND)
    assert len(coordinator.tick()) == 1


def test_the_switch_persists_through_the_real_service(
    tmp_path: Path, clock: Clock, user: SyncTarget
) -> None:
    home = HomeLayout(tmp_path / "home")
    real = SyncService(home, backups=BackupStore(home.backups_dir, clock=clock), clock=clock)
    coordinator = SyncCoordinator(real, clock=clock)
    coordinator.register(user)
    coordinator.set_enabled(False)
    assert SyncSettingsFile(home).enabled() is False
    assert real.cancelled is not None
    assert real.cancelled() is True
    assert coordinator.tick() == []
    # A new process (a restart) starts switched off.
    again = SyncService(home, backups=BackupStore(home.backups_dir, clock=clock), clock=clock)
    assert SyncCoordinator(again, clock=clock).enabled is False
    coordinator.set_enabled(True)
    assert SyncSettingsFile(home).enabled() is True


def test_a_cancel_callable_given_to_the_service_is_kept(service: FakeService, clock: Clock) -> None:
    stop = threading.Event()
    service.cancelled = stop.is_set
    SyncCoordinator(service, clock=clock)
    assert service.cancelled is not None
    assert service.cancelled() is False
    stop.set()
    assert service.cancelled() is True


# ---- the background loop -----------------------------------------------------------------------


def test_the_loop_runs_due_passes_and_stops_cleanly(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    ran = threading.Semaphore(0)
    service.during = lambda target: ran.release()
    reports: list[PassReport] = []
    loop = SyncLoop(coordinator, on_report=reports.append)
    coordinator.register(user)
    loop.start()
    try:
        assert ran.acquire(timeout=5)  # the check at registration
        coordinator.notify_write(user)
        clock.advance(3 * SECOND)
        loop.wake()
        assert ran.acquire(timeout=5)  # the write, once the clock says it is due
    finally:
        assert loop.stop(timeout=5)
    assert not loop.running
    assert len(reports) == 2
    with pytest.raises(RuntimeError):
        loop.start()


def test_the_loop_survives_a_failing_pass(
    coordinator: SyncCoordinator, service: FakeService, clock: Clock, user: SyncTarget
) -> None:
    ran = threading.Semaphore(0)

    def explode(target: SyncTarget) -> PassReport:
        ran.release()
        raise RuntimeError("boom")

    def fine(target: SyncTarget) -> PassReport:
        ran.release()
        return quiet(target)

    service.then(explode, fine)
    loop = SyncLoop(coordinator)
    coordinator.register(user)
    loop.start()
    try:
        assert ran.acquire(timeout=5)
        clock.advance(60 * SECOND)
        loop.wake()
        assert ran.acquire(timeout=5)
    finally:
        assert loop.stop(timeout=5)


def test_stopping_a_loop_that_never_started(coordinator: SyncCoordinator) -> None:
    assert SyncLoop(coordinator).stop() is True
