"""A scripted model server on 127.0.0.1 speaking the OpenAI chat-completions and Anthropic
messages wire formats. It records every request and answers from a script (tool calls, then
text); with the script used up it answers a plain text."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FALLBACK_TEXT = "(the stub has nothing more to say)"


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def openai_text(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def openai_tool_call(
    name: str, arguments: dict[str, Any], call_id: str = "call_1"
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }


def anthropic_text(text: str) -> dict[str, Any]:
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def anthropic_tool_use(
    name: str, arguments: dict[str, Any], call_id: str = "toolu_1"
) -> dict[str, Any]:
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}],
        "stop_reason": "tool_use",
    }


class StubModelServer:
    """Start with :meth:`start`; stop with :meth:`stop` (the fixture does both)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._script: list[tuple[int, dict[str, Any]]] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                stub._record(Recorded(self.path, dict(self.headers.items()), body))
                status, answer = stub._next(self.path)
                data = json.dumps(answer).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def script(self, *answers: dict[str, Any], status: int = 200) -> None:
        """Answer the next requests with these bodies, in order."""
        with self._lock:
            self._script.extend((status, answer) for answer in answers)

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _next(self, path: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        if path.endswith("/messages"):
            return 200, anthropic_text(FALLBACK_TEXT)
        return 200, openai_text(FALLBACK_TEXT)

    def bodies(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            recorded = list(self.requests)
        for request in recorded:
            yield request.body
