"""A cancelled model call ends its connection at once (spec 09.4), over real loopback HTTP."""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from oharness.harness.anthropic_provider import AnthropicChatModel
from oharness.harness.model import CancelToken, ModelCancelled, ModelError, ModelRequest
from oharness.harness.openai_provider import OpenAIChatModel
from oharness.harness.transport import AbortableTransport

REPLY = json.dumps(
    {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
).encode()
Model = OpenAIChatModel | AnthropicChatModel
REQUEST = ModelRequest(system="", messages=(), timeout_s=120.0)


class HoldingServer:
    """Answers every request on a connection, except a request whose body says ``hold``: that
    one it never answers, and it records when the client hangs up."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._tls = tls
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        self.connections = 0
        self.held = threading.Event()
        self.holding = 0
        self.hangups = 0
        self.hung_up = threading.Event()
        self.hung_up_at = 0.0
        self._open: list[socket.socket] = []
        self._closing = False
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
        try:
            self._answer(conn)
        except OSError:
            if not self._closing:  # the test closing its server ends a connection, nothing else
                raise

    def _answer(self, conn: socket.socket) -> None:
        buffer = b""
        if self._tls is not None:
            conn = self._tls.wrap_socket(conn, server_side=True)
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
                    self.holding += 1
                    self.held.set()
                    while conn.recv(65536):
                        pass
                    self.hung_up_at = time.monotonic()
                    self.hangups += 1
                    self.hung_up.set()
                    return
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(REPLY)}\r\n\r\n".encode()
                    + REPLY
                )

    def close(self) -> None:
        self._closing = True
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


def _certificate(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: (the server's context, a client's trusting it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    (directory / "cert.pem").write_bytes(pem)
    (directory / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    return server, ssl.create_default_context(cadata=pem.decode())


def test_a_cancel_drops_a_tls_connection_too(tmp_path: Path) -> None:
    server_context, client_context = _certificate(tmp_path)
    server = HoldingServer(tls=server_context)
    transport = AbortableTransport(ssl_context=client_context)
    model = OpenAIChatModel("m", base_url=server.url, api_key="k", transport=transport)
    try:
        assert model.complete(REQUEST).text == "ok"  # the certificate is trusted
        token = CancelToken()
        caller, outcome = _call_in_background(model, token)
        assert server.held.wait(10)
        cancelled_at = time.monotonic()
        token.cancel()
        caller.join(5)
        assert isinstance(outcome.get("error"), ModelCancelled)
        assert server.hung_up.wait(1.0), "the TLS connection stayed open after the cancel"
        assert server.hung_up_at - cancelled_at < 1.0
        assert model.complete(REQUEST, cancel=CancelToken()).text == "ok"
    finally:
        model.close()
        server.close()


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


def test_cancelling_one_call_leaves_another_in_flight_alone(server: HoldingServer) -> None:
    model = OpenAIChatModel("m", base_url=server.url, api_key="k")
    first, second = CancelToken(), CancelToken()
    first_caller, first_outcome = _call_in_background(model, first)
    second_caller, second_outcome = _call_in_background(model, second)
    deadline = time.monotonic() + 10
    while server.holding < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.holding == 2
    first.cancel()
    first_caller.join(5)
    assert server.hung_up.wait(1.0) and server.hangups == 1
    time.sleep(0.2)  # the other request must still be waiting for its answer
    assert server.hangups == 1 and second_caller.is_alive() and not second_outcome
    second.cancel()
    second_caller.join(5)
    assert isinstance(first_outcome.get("error"), ModelCancelled)
    assert isinstance(second_outcome.get("error"), ModelCancelled)
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


def test_a_cancel_while_connecting_returns_at_once_and_sends_nothing() -> None:
    with socket.create_server(("127.0.0.1", 0), backlog=0) as listener:
        port = listener.getsockname()[1]
        filler = socket.create_connection(("127.0.0.1", port))  # the accept queue is now full
        model = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
        token = CancelToken()
        caller, outcome = _call_in_background(model, token)
        deadline = time.monotonic() + 5
        while not _model_call_threads() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the worker is now waiting in connect()
        cancelled_at = time.monotonic()
        token.cancel()
        caller.join(5)
        assert time.monotonic() - cancelled_at < 1.0
        assert isinstance(outcome.get("error"), ModelCancelled)
        first, _ = listener.accept()  # make room: the pending connect now completes
        listener.settimeout(10)
        late, _ = listener.accept()
        late.settimeout(10)
        assert late.recv(65536) == b"", "a request went out after the cancel"
        deadline = time.monotonic() + 5
        while _model_call_threads() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _model_call_threads() == []
        for conn in (first, late, filler):
            conn.close()
        model.close()
