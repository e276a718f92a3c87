"""Per-account request rate limiting on one replica (spec 08): a token bucket per account.

This is the only in-process state of the server, and it is deliberately local: each replica
allows ``rate_per_minute`` requests per account, so the limit scales with the replica count
(documented in docs/self-hosting.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Seconds, monotonic. Injected so tests never sleep.
MonotonicClock = Callable[[], float]


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """Allows ``per_minute`` requests a minute per key, in bursts of up to ``per_minute``."""

    def __init__(self, per_minute: int, clock: MonotonicClock = time.monotonic) -> None:
        self._per_minute = per_minute
        self._rate = per_minute / 60.0
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()
        self._last_sweep = clock()

    @property
    def enabled(self) -> bool:
        """False when configured with 0 (no limit)."""
        return self._per_minute > 0

    def acquire(self, key: str) -> int | None:
        """Take one request for ``key``: ``None`` if allowed, else seconds to wait."""
        if not self.enabled:
            return None
        now = self._clock()
        with self._lock:
            self._sweep(now)
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(float(self._per_minute), now)
            else:
                elapsed = max(0.0, now - bucket.updated)
                bucket.tokens = min(float(self._per_minute), bucket.tokens + elapsed * self._rate)
                bucket.updated = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return max(1, math.ceil((1.0 - bucket.tokens) / self._rate))

    def _sweep(self, now: float) -> None:
        # Buckets idle for a minute are full again: forgetting them changes nothing.
        if now - self._last_sweep < 60.0:
            return
        self._last_sweep = now
        idle = [key for key, bucket in self._buckets.items() if now - bucket.updated >= 60.0]
        for key in idle:
            del self._buckets[key]
