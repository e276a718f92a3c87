"""An OpenAI-compatible chat-completions server on 127.0.0.1 that answers raw bytes.

Each scripted answer is a status and the exact bytes of the response body, so a test can send
what a misbehaving model server sends (bytes that are not UTF-8, a 429), or hold an answer back
until the client has given up waiting.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion_bytes(content: str | bytes) -> bytes:
    """A chat-completions body whose message content is ``content`` (bytes kept as they are)."""
    marker = "\u0000CONTENT\u0000"
    body = json.dumps(
        {
            "id": "chatcmpl-raw",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": marker},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode("utf-8")
    if isinstance(content, str):
        encoded = json.dumps(content).encode("utf-8")[1:-1]
    else:
        encoded = content.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return body.replace(json.dumps(marker).encode("utf-8")[1:-1], encoded)


class RawModelServer:
    """``script(status, body)`` answers the next request; ``hold()`` delays answers."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._script: list[tuple[int, bytes]] = []
        self._lock = threading.Lock()
        self.released = threading.Event()
        self.released.set()
        #: requests after this many wait for ``released`` (None: only ``released`` decides)
        self.hold_after: int | None = None
        self.arrived = threading.Condition()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    number = len(server.requests)
                    status, data = (
                        server._script.pop(0)
                        if server._script
                        else (200, completion_bytes('{"new": [], "updates": []}'))
                    )
                with server.arrived:
                    server.arrived.notify_all()
                if server.hold_after is None or number > server.hold_after:
                    server.released.wait(30)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up waiting
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.05)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def wait_for_requests(self, count: int, timeout_s: float = 30.0) -> bool:
        """Block until ``count`` requests have arrived (False on timeout)."""
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.requests) >= count, timeout_s)

    def script(self, body: bytes, status: int = 200) -> None:
        with self._lock:
            self._script.append((status, body))

    def answer(self, content: str | bytes) -> None:
        """Answer the next request with a completion holding ``content``."""
        self.script(completion_bytes(content))
