"""Compaction: older messages replaced by a model-written summary (spec 09.2).

The cut falls just before one of the last user messages, so an assistant's tool calls and their
results are never separated and the newest turns stay word for word. The summary becomes a user
message marked ``metadata["summary"]``, in the place of what it replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from oharness.harness.message import Message
from oharness.harness.model import CancelToken, ChatModel, ModelError, ModelRequest

SUMMARY_PREFIX: Final = "Summary of the earlier conversation (older messages were compacted):\n\n"
SUMMARY_SYSTEM: Final = """\
You compact conversations between a user and an AI agent. Write a summary that lets the agent
continue the work without the original messages: the user's goals and requests in their own
terms, decisions made and why, facts learned, files and commands involved, what was done, what
is still open. Be specific and brief. Write only the summary."""
_TOOL_TEXT_CHARS: Final = 600


def is_summary(message: Message) -> bool:
    """True for a summary that replaced compacted messages."""
    return bool(message.metadata.get("summary"))


def compaction_cut(messages: Sequence[Message], keep_turns: int) -> int:
    """How many leading messages compaction replaces (0: nothing worth compacting)."""
    starts = [
        index
        for index, message in enumerate(messages)
        if message.role == "user" and not is_summary(message)
    ]
    if keep_turns < 1:
        keep_turns = 1
    if len(starts) <= keep_turns:
        return 0
    cut = starts[-keep_turns]
    if cut == 1 and is_summary(messages[0]):
        return 0  # only an earlier summary before the kept turns
    return cut


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_for_summary(messages: Sequence[Message]) -> str:
    """The stretch to summarise, as plain text (attachments left out: they are not the user's)."""
    lines: list[str] = []
    for message in messages:
        if message.role == "user":
            label = "Earlier summary" if is_summary(message) else "User"
            lines.append(f"{label}: {message.text}")
        elif message.role == "assistant":
            if message.text:
                lines.append(f"Assistant: {message.text}")
            for call in message.tool_calls:
                lines.append(f"Assistant called {call.name}({call.arguments_text()})")
        else:
            outcome = "failed" if message.is_error else "returned"
            result = _shorten(message.text, _TOOL_TEXT_CHARS)
            lines.append(f"Tool {message.tool_name or '?'} {outcome}: {result}")
    return "\n\n".join(lines)


def summarise(
    model: ChatModel,
    messages: Sequence[Message],
    *,
    request_id: str,
    timeout_s: float,
    cancel: CancelToken | None = None,
) -> str:
    """Ask the model for a summary of ``messages`` (raises :class:`ModelError`)."""
    prompt = Message(
        request_id,
        "user",
        "Summarise this conversation:\n\n" + render_for_summary(messages),
    )
    reply = model.complete(
        ModelRequest(system=SUMMARY_SYSTEM, messages=(prompt,), timeout_s=timeout_s),
        cancel=cancel,
    )
    text = reply.text.strip()
    if not text:
        raise ModelError("the model returned an empty summary; nothing was compacted")
    return text


def summary_metadata(replaced: Sequence[Message], reason: str, model: str) -> dict[str, object]:
    """What a summary message records about itself."""
    return {
        "summary": {
            "replaced": len(replaced),
            "reason": reason,
            "model": model,
            "firstId": replaced[0].id if replaced else None,
            "lastId": replaced[-1].id if replaced else None,
        }
    }
