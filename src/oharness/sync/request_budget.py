"""The request budget of a process's background sync (spec 07.5): about 20 requests a minute
shared by every notes directory, as a token bucket debited by each pass's requests (counted
one by one, or estimated from the pass report)."""

from __future__ import annotations

import math

from oharness.sync.protocol import Quotas
from oharness.sync.sync_service import PassReport

REQUESTS_PER_MINUTE = 20
#: Errors raised before any request leaves the machine.
LOCAL_ERROR_CODES = frozenset({"not_logged_in", "config"})


def estimate_requests(report: PassReport) -> int:
    """How many requests a pass probably made (used when requests are not counted one by one)."""
    result = report.result
    identity = 1 if report.old_server else 0  # read again at every pass while it is older
    if result is None:
        if report.error is None:  # paused: by a local check, the identity, or an answer
            return identity + (1 if report.paused_by_server else 0)
        return 0 if report.error.get("code") in LOCAL_ERROR_CODES else 1
    if result.skipped is not None:
        return 0
    # A conflict met now needed the cloud's body; one left waiting from before costs nothing.
    met_conflict = bool(result.conflicts) and result.changed_anything
    bodies = 1 if result.pulled or result.merged or met_conflict else 0
    changes = len(result.pushed) + len(result.rejected)
    return identity + 1 + bodies + math.ceil(changes / Quotas().max_changes_per_commit)


class TokenBucket:
    """About ``per_minute`` requests a minute, in bursts of at most ``capacity``.

    Integer arithmetic (one token is 60,000 units; each millisecond adds ``per_minute`` units)
    so that ``ready_at`` is exact. Debits may overdraw; the debt is repaid before the next pass.
    """

    UNIT = 60_000

    def __init__(self, per_minute: int, *, now: int, capacity: int | None = None) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self.per_minute = per_minute
        self.capacity = (capacity if capacity is not None else per_minute) * self.UNIT
        self._units = self.capacity
        self._at = now

    def _level(self, now: int) -> int:
        if now <= self._at:
            return self._units
        return min(self.capacity, self._units + (now - self._at) * self.per_minute)

    def tokens(self, now: int) -> float:
        """Requests available at ``now`` (negative while in debt)."""
        return self._level(now) / self.UNIT

    def take(self, count: int, now: int) -> None:
        """Debit ``count`` requests."""
        self._units = self._level(now) - count * self.UNIT
        self._at = max(self._at, now)

    def ready_at(self, now: int) -> int:
        """The first time at or after ``now`` with a whole request available."""
        missing = self.UNIT - self._level(now)
        return now if missing <= 0 else now + -(-missing // self.per_minute)
