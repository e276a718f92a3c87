"""The small model interface every provider implements (spec 09.4).

A model answers one :class:`ModelRequest` (system prompt, messages, tools, optionally a JSON
schema for structured output) with one :class:`ModelReply`. Every call has a timeout and can be
cancelled through a :class:`CancelToken`. Provider failures are :class:`ModelError` values of
the one exception tree; no HTTP library exception leaves an adapter.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from oharness.errors import OHarnessError
from oharness.harness.message import Message, ToolCall

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_TOKENS = 4096


class ModelError(OHarnessError):
    """A model provider refused or could not be reached (``transient``: worth retrying)."""

    code = "model"

    def __init__(
        self,
        message: str,
        *,
        code: str = "model",
        status: int | None = None,
        transient: bool = False,
        **details: Any,
    ) -> None:
        super().__init__(message, **details)
        self.code = code
        self.status = status
        self.transient = transient


class ModelCancelled(ModelError):
    """The call was cancelled before an answer arrived."""

    def __init__(self, message: str = "the model call was cancelled") -> None:
        super().__init__(message, code="cancelled")


class CancelToken:
    """Cancels model calls from another thread (Ctrl-C, a stop button, a closing harness)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Cancel; calls in flight are aborted and later ones refused."""
        with self._lock:
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on cancel (at once if already cancelled); returns an unsubscriber."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)

                def unsubscribe() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)

                return unsubscribe
        callback()
        return lambda: None

    def check(self) -> None:
        """Raise :class:`ModelCancelled` when cancelled."""
        if self._event.is_set():
            raise ModelCancelled()


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model sees it: name, description, JSON-schema input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.input_schema),
            },
        }

    def anthropic(self) -> dict[str, Any]:
        """The Anthropic messages ``tools`` entry."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }


@dataclass(frozen=True)
class ModelRequest:
    """One call: ``json_schema`` asks for structured output matching that schema."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    json_schema: Mapping[str, Any] | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class ModelReply:
    """The answer: text and/or tool calls; ``data`` holds parsed structured output."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str = "stop"
    data: Any = None
    usage: Mapping[str, int] = field(default_factory=dict)


class ChatModel(Protocol):
    """What the harness needs of a model provider."""

    @property
    def name(self) -> str:
        """``provider:model``, for messages and transcripts."""
        ...

    def complete(self, request: ModelRequest, *, cancel: CancelToken | None = None) -> ModelReply:
        """Answer one request (raises :class:`ModelError`)."""
        ...


def parse_json_output(text: str) -> Any:
    """Structured output from a model's text (tolerates a fenced code block around it)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    try:
        return json.loads(stripped)
    except ValueError as exc:
        raise ModelError(
            f"the model did not answer with JSON ({exc}); try again or use a model that supports "
            "structured output",
            code="model_output",
        ) from exc


def parse_tool_arguments(call_id: str, name: str, raw: str | Mapping[str, Any] | None) -> ToolCall:
    """A tool call from a provider's arguments (JSON text or an object)."""
    if isinstance(raw, Mapping):
        return ToolCall(call_id, name, dict(raw))
    text = raw or "{}"
    try:
        value = json.loads(text)
    except ValueError:
        return ToolCall(call_id, name, None, text)
    if not isinstance(value, dict):
        return ToolCall(call_id, name, None, text)
    return ToolCall(call_id, name, value)
