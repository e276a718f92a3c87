"""A scripted model for tests and demos: answers from a list, records every request."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from oharness.harness.message import ToolCall
from oharness.harness.model import CancelToken, ModelError, ModelReply, ModelRequest

Step = ModelReply | Callable[[ModelRequest], ModelReply]
_call_ids = itertools.count(1)


def text_reply(text: str) -> ModelReply:
    """A final answer."""
    return ModelReply(text=text)


def tool_reply(name: str, arguments: Mapping[str, Any], *, text: str = "") -> ModelReply:
    """An answer that calls one tool."""
    call = ToolCall(f"call_{next(_call_ids)}", name, dict(arguments))
    return ModelReply(text=text, tool_calls=(call,), stop_reason="tool_calls")


def json_reply(data: Any) -> ModelReply:
    """A structured answer."""
    import json

    return ModelReply(text=json.dumps(data), data=data)


class ScriptedModel:
    """Answers each call with the next step of its script (a reply, or a function of the request).

    When the script runs out it answers ``fallback`` if given, else raises :class:`ModelError`.
    """

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        name: str = "scripted:test",
        fallback: ModelReply | None = None,
    ) -> None:
        self._steps = list(steps)
        self._name = name
        self._fallback = fallback
        self._lock = threading.Lock()
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    def add(self, *steps: Step) -> None:
        """Append steps to the script."""
        with self._lock:
            self._steps.extend(steps)

    def complete(self, request: ModelRequest, *, cancel: CancelToken | None = None) -> ModelReply:
        """The next step's answer."""
        if cancel is not None:
            cancel.check()
        with self._lock:
            self.requests.append(request)
            step: Step | None = self._steps.pop(0) if self._steps else self._fallback
        if step is None:
            raise ModelError("the scripted model has no more answers", code="model_script")
        return step(request) if callable(step) else step
