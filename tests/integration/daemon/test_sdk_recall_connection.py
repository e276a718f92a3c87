"""The SDK's recall over its own kept-alive connection: the same answers and errors as the
general client, one connection for many prompts, and a connection the daemon closed while
idle replaced without the caller noticing (and without asking twice)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from daemon_support import LiveDaemon, project_daemon

from oharness.sdk import DaemonClient, DaemonError
from oharness.sdk.connection import JsonConnection


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    with project_daemon(tmp_path) as running:
        yield running


def test_the_recall_answers_as_the_general_client_does(daemon: LiveDaemon) -> None:
    with DaemonClient(daemon.url, daemon.token) as client, daemon.client() as plain:
        client.wait(client.remember_workspace_memory("Webhooks retry with backoff — 重试 🚀."))
        general = plain.post(
            "/workspace/recall", json={"message": "do webhooks retry? 重试", "exclude": []}
        )
        assert general.status_code == 200
        assert client.recall("do webhooks retry? 重试") == general.json()
        assert "重试 🚀" in client.recall("do webhooks retry? 重试")["block"]
        with pytest.raises(DaemonError) as refused:
            client.recall("x", exclude=[1] * 2)  # type: ignore[list-item]
        assert (refused.value.status, refused.value.code) == (400, "invalid_exclude")
        assert client.recall("do webhooks retry?")["attached"]  # the connection still serves


def test_an_unreachable_daemon_is_a_daemon_error(daemon: LiveDaemon) -> None:
    with (
        DaemonClient("http://127.0.0.1:9", daemon.token, timeout=2) as client,
        pytest.raises(DaemonError) as failed,
    ):
        client.recall("anything")
    assert (failed.value.status, failed.value.code) == (0, "unreachable")


class Closing(BaseHTTPRequestHandler):
    """Answers over HTTP/1.1 without saying it closes, then closes (a daemon's idle timeout)."""

    protocol_version = "HTTP/1.1"
    received: ClassVar[list[bytes]] = []
    peers: ClassVar[set[int]] = set()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(body)
        type(self).peers.add(self.client_address[1])
        answer = b'{"attached": [], "linked": [], "block": ""}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        return


def test_a_connection_closed_while_idle_is_replaced_and_the_request_sent_once() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Closing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        connection = JsonConnection(f"http://127.0.0.1:{server.server_port}", {}, 5.0)
        for number in range(3):
            status, _ = connection.post("/workspace/recall", b'{"message": "%d"}' % number)
            assert status == 200
        connection.close()
    finally:
        server.shutdown()
        server.server_close()
    assert Closing.received == [b'{"message": "%d"}' % number for number in range(3)]
    assert len(Closing.peers) == 3


def test_the_connection_is_kept_between_prompts(daemon: LiveDaemon) -> None:
    with DaemonClient(daemon.url, daemon.token) as client:
        client.recall("first")
        assert client._recall is not None
        first = client._recall._connection
        client.recall("second")
        assert first is not None and client._recall._connection is first


def test_only_plain_http_addresses_get_the_lean_connection() -> None:
    from oharness.errors import OHarnessError

    with pytest.raises(OHarnessError, match="not an http://"):
        JsonConnection("https://127.0.0.1:1", {}, 1.0)
