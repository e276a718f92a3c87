"""The conversation an extraction pass reads, in a form free of any harness type.

The harness (or the CLI, from a saved transcript) turns its messages into :class:`Turn` values:
a user's own words (never what was attached to them, such as recalled notes), an assistant's
text and tool calls, a tool's result. :func:`render_conversation` writes them as plain text for
the prompt, newest kept when the stretch is longer than the budget, with credentials redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from oharness.notes.secrets import redact_secrets

TurnRole = Literal["user", "assistant", "tool"]
TOOL_TEXT_CHARS: Final = 600
CALL_TEXT_CHARS: Final = 600


@dataclass(frozen=True)
class Turn:
    """One message of the stretch: ``sequence`` orders messages (``m12`` is 12)."""

    sequence: int
    role: TurnRole
    text: str
    tool_name: str | None = None
    is_error: bool = False
    calls: tuple[str, ...] = ()

    @property
    def is_user_words(self) -> bool:
        """A real user message: the person's words (tool results and summaries are not)."""
        return self.role == "user" and bool(self.text.strip())


def count_user_turns(turns: Sequence[Turn]) -> int:
    """How many real user messages a stretch holds."""
    return sum(1 for turn in turns if turn.is_user_words)


def _shorten(text: str, limit: int) -> str:
    # Credentials go before the cut: half a token left at the edge would not be recognised.
    text = redact_secrets(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_turn(turn: Turn) -> str:
    """One turn as plain text."""
    if turn.role == "user":
        return f"User: {turn.text}"
    if turn.role == "assistant":
        lines = [f"Assistant: {turn.text}"] if turn.text.strip() else []
        lines.extend(f"Assistant called {_shorten(call, CALL_TEXT_CHARS)}" for call in turn.calls)
        return "\n".join(lines)
    outcome = "failed" if turn.is_error else "returned"
    return f"Tool {turn.tool_name or '?'} {outcome}: {_shorten(turn.text, TOOL_TEXT_CHARS)}"


@dataclass(frozen=True)
class RenderedConversation:
    """The text the model reads and how much of the stretch it covers."""

    text: str
    shown: int
    left_out: int

    @property
    def empty(self) -> bool:
        return not self.text.strip()


def render_conversation(turns: Sequence[Turn], budget_chars: int) -> RenderedConversation:
    """The stretch as text within ``budget_chars``: the newest turns that fit, redacted.

    A stretch longer than the budget loses its oldest turns (counted on a first line), so one
    pass stays one request of bounded size.
    """
    parts: list[str] = []
    used = 0
    for turn in reversed(turns):
        text = redact_secrets(render_turn(turn))
        if not text:
            continue
        if used + len(text) + 2 > budget_chars:
            if not parts:  # a single huge turn: keep its end rather than nothing
                parts.append("…" + text[-(budget_chars - 1) :])
            break
        parts.append(text)
        used += len(text) + 2
    shown = len(parts)
    left_out = sum(1 for turn in turns if render_turn(turn)) - shown
    ordered = list(reversed(parts))
    if left_out > 0:
        ordered.insert(0, f"[{left_out} earlier messages of this stretch are not shown]")
    return RenderedConversation("\n\n".join(ordered), shown, max(left_out, 0))
