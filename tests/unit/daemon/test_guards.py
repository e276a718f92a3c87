"""The daemon's guards at their boundaries: the back-off's free tries, window and ceiling, the
body cap at exactly its limit, the declared length, and the own-origin rule's ports."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from starlette.requests import HTTPConnection

from oharness.daemon.auth import DaemonAuth
from oharness.daemon.errors import DaemonApiError
from oharness.daemon.guards import FailureBackoff, declared_length, read_capped


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_free_tries_then_doubling_up_to_the_ceiling() -> None:
    clock = Clock()
    backoff = FailureBackoff(clock)
    assert [backoff.failed("a") for _ in range(backoff.free)] == [None] * backoff.free
    waits = [backoff.failed("a") for _ in range(8)]
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]
    assert backoff.failed("b") is None  # another client is not slowed by "a"


def test_a_quiet_window_starts_afresh_and_one_second_less_does_not() -> None:
    clock = Clock()
    backoff = FailureBackoff(clock)
    for _ in range(backoff.free + 1):
        backoff.failed("a")
    clock.now += backoff.window - 1  # the window is not over: still counted
    assert backoff.failed("a") == 2
    clock.now += backoff.window  # a whole window without a wrong try
    assert [backoff.failed("a") for _ in range(backoff.free)] == [None] * backoff.free
    assert backoff.failed("a") == 1


def test_the_pause_is_the_wait_up_to_the_tarpit() -> None:
    backoff = FailureBackoff(Clock())
    assert backoff.pause(1) == 1.0 and backoff.pause(60) == backoff.tarpit


def test_the_oldest_client_is_forgotten_past_the_limit() -> None:
    backoff = FailureBackoff(Clock())
    backoff.max_clients = 2
    for _ in range(backoff.free):
        backoff.failed("old")
    backoff.failed("b")
    backoff.failed("c")  # "old" is forgotten: its tries start again
    assert [backoff.failed("old") for _ in range(backoff.free)] == [None] * backoff.free


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def test_the_body_cap_at_its_limit_and_one_byte_over() -> None:
    assert asyncio.run(read_capped(_chunks(b"ab", b"cd"), limit=4)) == b"abcd"
    with pytest.raises(DaemonApiError) as refused:
        asyncio.run(read_capped(_chunks(b"ab", b"cde"), limit=4))
    assert refused.value.status == 413 and refused.value.code == "body_too_large"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [([], None), ([(b"content-length", b"12")], 12), ([(b"content-length", b"-1")], None)],
)
def test_declared_length(headers: list[tuple[bytes, bytes]], expected: int | None) -> None:
    assert declared_length({"type": "http", "headers": headers}) == expected


def _connection(host: str, origin: str | None) -> HTTPConnection:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return HTTPConnection({"type": "http", "headers": headers, "client": ("127.0.0.1", 5)})


@pytest.mark.parametrize(
    ("host", "origin", "allowed"),
    [
        ("127.0.0.1:4318", None, True),
        ("127.0.0.1:4318", "http://127.0.0.1:4318", True),
        ("127.0.0.1:4318", "http://localhost:4318", True),
        ("127.0.0.1:4318", "http://127.0.0.1:4319", False),
        ("127.0.0.1:4318", "http://localhost:3000", False),
        ("127.0.0.1:4318", "http://127.0.0.1", False),
        ("localhost", "http://localhost", True),  # both on port 80
        ("localhost", "http://localhost:80", True),
        ("localhost", "https://localhost", False),  # 443 is another port
        ("[::1]:4318", "http://[::1]:4318", True),
        ("[::1]:4318", "http://[::1]:4319", False),
        ("127.0.0.1:4318", "http://evil.example:4318", False),
        ("127.0.0.1:4318", "null", False),
        ("127.0.0.1:4318", "http://127.0.0.1:99999", False),
        ("evil.example:4318", None, False),
    ],
)
def test_the_own_origin_includes_the_port(host: str, origin: str | None, allowed: bool) -> None:
    auth = DaemonAuth("token")
    try:
        auth.check_host(_connection(host, origin))
    except DaemonApiError as exc:
        assert not allowed and exc.status == 403
    else:
        assert allowed
