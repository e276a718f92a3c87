"""A cancelled model call ends its connection at once (spec 09.4), over real loopback HTTP."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from oharness.harness.anthropic_provider import AnthropicChatModel
from oharness.harness.model import CancelToken, ModelCancelled, ModelError, ModelRequest
from oharness.harness.openai_provider import OpenAIChatModel

REPLY = json.dumps(
    {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
).encode()
Model = OpenAIChatModel | AnthropicChatModel
REQUEST = ModelRequest(system="", messages=(), timeout_s=120.0)


class HoldingServer:
    """Answers every request on a connection, except a request whose body says ``hold``: that
    one it never answers, and it records when the client hangs up."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        self.connections = 0
        self.held = threading.Event()
        self.hung_up = threading.Event()
        self.hung_up_at = 0.0
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        with conn:
            while True:
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                while not _:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer = head + buffer + chunk
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                body, buffer = buffer[:length], buffer[length:]
                if b"hold" in body:
                    self.held.set()
                    while conn.recv(65536):
                        pass
                    self.hung_up_at = time.monotonic()
                    self.hung_up.set()
                    return
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(REPLY)}\r\n\r\n".encode()
                    + REPLY
                )

    def close(self) -> None:
        self._listener.close()
        for conn in self._open:
            conn.close()


@pytest.fixture
def server() -> Iterator[HoldingServer]:
    holding = HoldingServer()
    yield holding
    holding.close()


def _held_request() -> ModelRequest:
    return ModelRequest(system="hold", messages=(), timeout_s=120.0)


def _call_in_background(
    model: Model, token: CancelToken
) -> tuple[threading.Thread, dict[str, BaseException]]:
    outcome: dict[str, BaseException] = {}

    def call() -> None:
        try:
            model.complete(_held_request(), cancel=token)
        except BaseException as exc:
            outcome["error"] = exc

    caller = threading.Thread(target=call)
    caller.start()
    return caller, outcome


def _model_call_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "oharness-model-call" and t.is_alive()]


@pytest.mark.parametrize("adapter", [OpenAIChatModel, AnthropicChatModel])
def test_a_cancel_drops_the_connection_within_a_second(
    server: HoldingServer, adapter: type[Model]
) -> None:
    model = adapter("m", base_url=server.url, api_key="k")
    token = CancelToken()
    caller, outcome = _call_in_background(model, token)
    assert server.held.wait(10), "the request never reached the server"
    cancelled_at = time.monotonic()
    token.cancel()
    caller.join(5)
    assert isinstance(outcome.get("error"), ModelCancelled)
    assert server.hung_up.wait(1.0), "the connection stayed open after the cancel"
    assert server.hung_up_at - cancelled_at < 1.0
    deadline = time.monotonic() + 1.0
    while _model_call_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _model_call_threads() == [], "the abandoned request is still running"
    model.close()


def test_the_model_works_again_after_a_cancel(server: HoldingServer) -> None:
    model = OpenAIChatModel("m", base_url=server.url, api_key="k")
    token = CancelToken()
    caller, _ = _call_in_background(model, token)
    assert server.held.wait(10)
    token.cancel()
    caller.join(5)
    assert model.complete(REQUEST, cancel=CancelToken()).text == "ok"
    model.close()


def test_a_cancel_after_the_answer_leaves_the_pooled_connection_alone(
    server: HoldingServer,
) -> None:
    model = OpenAIChatModel("m", base_url=server.url, api_key="k")
    token = CancelToken()
    assert model.complete(REQUEST, cancel=token).text == "ok"
    token.cancel()  # the call is over: its connection now belongs to the pool
    assert model.complete(REQUEST, cancel=CancelToken()).text == "ok"
    assert model.complete(REQUEST).text == "ok"
    assert server.connections == 1
    model.close()


def test_a_refused_connection_is_still_a_network_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    model = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
    with pytest.raises(ModelError) as raised:
        model.complete(REQUEST, cancel=CancelToken())
    assert raised.value.code == "network" and raised.value.transient
    model.close()
