"""Per-account rate limiting on one replica (spec 08)."""

from __future__ import annotations

from sync_server_support import FakeMonotonic

from oharness.server.ratelimit import RateLimiter


def test_bursts_up_to_the_rate_then_waits() -> None:
    clock = FakeMonotonic()
    limiter = RateLimiter(60, clock)
    assert all(limiter.acquire("alice") is None for _ in range(60))
    assert limiter.acquire("alice") == 1
    assert limiter.acquire("bob") is None  # accounts are independent
    clock.now += 1.0
    assert limiter.acquire("alice") is None
    assert limiter.acquire("alice") == 1


def test_slow_rates_report_longer_waits() -> None:
    clock = FakeMonotonic()
    limiter = RateLimiter(2, clock)
    assert limiter.acquire("a") is None and limiter.acquire("a") is None
    assert limiter.acquire("a") == 30
    clock.now += 30
    assert limiter.acquire("a") is None


def test_zero_disables_the_limit_and_idle_buckets_are_forgotten() -> None:
    assert not RateLimiter(0).enabled
    assert all(RateLimiter(0).acquire("a") is None for _ in range(1000))
    clock = FakeMonotonic()
    limiter = RateLimiter(1, clock)
    assert limiter.acquire("a") is None
    clock.now += 120
    assert limiter.acquire("b") is None
    assert limiter._buckets.keys() == {"b"}
