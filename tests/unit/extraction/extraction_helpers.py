"""Helpers shared by the extraction unit tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from oharness.extraction import SYSTEM, ExtractionReport, Turn
from oharness.harness.model import CancelToken, ModelError, ModelReply, ModelRequest
from oharness.memory.workspace import Workspace

Extract = Callable[..., ExtractionReport]


def conversation(*words: str) -> list[Turn]:
    """A short conversation: each user message answered by the assistant."""
    said = words or (
        "We deploy with the Zephyr release train now, not with the old Jenkins job.",
        "Yes: Zephyr leaves every Tuesday at noon, hotfixes any day.",
    )
    turns: list[Turn] = []
    for number, text in enumerate(said):
        turns.append(Turn(2 * number + 1, "user", text))
        turns.append(Turn(2 * number + 2, "assistant", "Noted."))
    return turns


def note(summary: str, body: str = "A body.", **extra: Any) -> dict[str, Any]:
    return {"summary": summary, "body": body, **extra}


def remember_zephyr(workspace: Workspace, body: str = "Zephyr leaves on Tuesdays.\n") -> str:
    return workspace.service.remember(
        "Deploys go out through the Zephyr release train", body, tags="zephyr, deploy, release"
    ).id


def bodies(workspace: Workspace) -> dict[str, str]:
    return {stored.note.summary: stored.note.body for stored in workspace.service.all_notes()}


Answer = Any  # a JSON-ready object, a text, an exception to raise, or a function of the request


class SmallModel:
    """The small model of a harness: summaries for compaction, scripted answers for extraction.

    Extraction requests are recorded in ``extractions``; ``hold()`` makes the next ones wait
    until ``release()``, to watch a pass in flight.
    """

    name = "scripted:small"

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.extractions: list[ModelRequest] = []
        self.summaries: list[ModelRequest] = []
        self.started = threading.Event()
        self._gate = threading.Event()
        self._gate.set()
        self._lock = threading.Lock()

    def answer(self, *answers: Answer) -> None:
        with self._lock:
            self.answers.extend(answers)

    def hold(self) -> None:
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    def complete(self, request: ModelRequest, *, cancel: CancelToken | None = None) -> ModelReply:
        if request.system != SYSTEM:
            self.summaries.append(request)
            return ModelReply(text="They talked about trains.")
        with self._lock:
            self.extractions.append(request)
            answer = self.answers.pop(0) if self.answers else {"new": [], "updates": []}
        self.started.set()
        if not self._gate.wait(10):
            raise ModelError("the test never released the model", code="model_timeout")
        if cancel is not None:
            cancel.check()
        if callable(answer):
            answer = answer(request)
        if isinstance(answer, BaseException):
            raise answer
        return ModelReply(text=answer if isinstance(answer, str) else json.dumps(answer))
