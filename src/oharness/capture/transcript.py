"""Reading a Claude Code transcript or a Codex rollout file from a byte offset.

Standard library only (a hook imports it). Both files are JSON Lines that their agent appends
to; a pass reads whole lines from the cursor on and stops before a line not yet finished, so
the next pass starts exactly where this one ended.

- **Claude Code** (JSONL at the hook's ``transcript_path``): ``type`` ``user`` or ``assistant``
  with ``message.content`` a string or a list of blocks (``text``, ``tool_use``,
  ``tool_result``). Lines marked ``isSidechain`` (a subagent's) or ``isMeta`` (injected by
  Claude Code), and a user's slash-command echoes, are not the person's words and are left out.
- **Codex** (the rollout ``~/.codex/sessions/…/rollout-….jsonl``): ``{"type", "payload"}``
  lines; ``event_msg`` ``user_message`` / ``agent_message`` are the conversation,
  ``response_item`` ``function_call`` / ``function_call_output`` the tools. The first line,
  ``session_meta``, names a subagent's thread in ``source.subagent``.

A recalled block (``<recalled-memory>…</recalled-memory>``) is cut out of a user's text: what
was attached to a message is not what the person said.
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False  # not typing's: a hook pays for every import
if TYPE_CHECKING:
    from typing import Any, Final

MAX_READ_BYTES: Final = 8 * 1024 * 1024
TOOL_TEXT_CHARS: Final = 2000
_RECALLED = re.compile(r"<recalled-memory>.*?(</recalled-memory>|$)", re.DOTALL)
_COMMAND_ECHO: Final = ("<command-name>", "<command-message>", "<local-command-", "Caveat:")


class Entry:
    """One message of a stretch: ``role`` user, assistant or tool."""

    __slots__ = ("calls", "is_error", "role", "text", "tool_name")

    def __init__(
        self,
        role: str,
        text: str,
        tool_name: str | None = None,
        is_error: bool = False,
        calls: tuple[str, ...] = (),
    ) -> None:
        self.role = role
        self.text = text
        self.tool_name = tool_name
        self.is_error = is_error
        self.calls = calls

    def __repr__(self) -> str:
        return f"Entry({self.role!r}, {self.text[:40]!r})"

    @property
    def is_user_words(self) -> bool:
        return self.role == "user" and bool(self.text.strip())


class Stretch:
    """The entries from ``start`` up to ``end`` (a byte offset after the last whole line)."""

    __slots__ = ("end", "entries", "start", "subagent")

    def __init__(self, start: int, end: int, entries: list[Entry], subagent: bool) -> None:
        self.start = start
        self.end = end
        self.entries = entries
        self.subagent = subagent

    @property
    def user_turns(self) -> int:
        return sum(1 for entry in self.entries if entry.is_user_words)

    def enough_for(self, event: str, min_user_turns: int) -> bool:
        """Spec 04's thresholds: ``pre-compact`` takes any words (its last chance to read
        them), ``session-end`` one user message, ``stop`` ``minUserTurns`` (at least 1)."""
        if event == "pre-compact":
            return any(entry.role != "tool" and entry.text.strip() for entry in self.entries)
        if event == "session-end":
            return self.user_turns >= 1
        return self.user_turns >= max(min_user_turns, 1)


def complete_end(path: str) -> int:
    """The offset just after the file's last whole line (0 when it has none)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        position = size
        while position > 0:
            step = min(65536, position)
            handle.seek(position - step)
            chunk = handle.read(step)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                return position - step + newline + 1
            position -= step
    return 0


def read_stretch(path: str, agent: str, start: int) -> Stretch:
    """The whole lines of ``path`` from ``start`` as entries (the newest 8 MiB when longer).

    A file shorter than ``start`` was replaced: it is read from its beginning."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size < start:
            start = 0
        begin = max(start, size - MAX_READ_BYTES)
        handle.seek(begin)
        data = handle.read(size - begin)
    cut = data.rfind(b"\n") + 1
    data = data[:cut]
    if begin > start:  # too long: drop the partial first line
        data = data[data.find(b"\n") + 1 :]
    subagent = agent == "codex" and start > 0 and _codex_subagent_head(path)
    entries: list[Entry] = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            continue  # a torn or foreign line is not the conversation
        if not isinstance(line, dict):
            continue
        if agent == "codex":
            subagent = subagent or _codex_is_subagent(line)
            entries.extend(_codex_entries(line))
        else:
            entries.extend(_claude_entries(line))
    return Stretch(start, begin + cut, entries, subagent)


def user_text(text: str) -> str:
    """A user's own words: recalled blocks and command echoes left out."""
    cleaned = _RECALLED.sub("", text).strip()
    return "" if cleaned.startswith(_COMMAND_ECHO) else cleaned


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block.get("text", "")
            for block in content
            if isinstance(block, dict) and block.get("type") in ("text", "input_text")
        ]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def _claude_entries(line: dict[str, Any]) -> list[Entry]:
    kind = line.get("type")
    message = line.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        return []
    if line.get("isSidechain") is True or line.get("isMeta") is True:
        return []
    content = message.get("content")
    if kind == "user":
        if isinstance(content, str):
            text = user_text(content)
            return [Entry("user", text)] if text else []
        entries = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                result = _text_of(block.get("content"))[:TOOL_TEXT_CHARS]
                entries.append(Entry("tool", result, "tool", block.get("is_error") is True))
            elif block.get("type") == "text":
                text = user_text(str(block.get("text", "")))
                if text:
                    entries.append(Entry("user", text))
        return entries
    calls = tuple(
        f"{block.get('name')}({json.dumps(block.get('input'), ensure_ascii=False)})"
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict) and block.get("type") == "tool_use"
    )
    text = _text_of(content)
    return [Entry("assistant", text, calls=calls)] if text.strip() or calls else []


def _codex_is_subagent(line: dict[str, Any]) -> bool:
    payload = line.get("payload")
    if line.get("type") != "session_meta" or not isinstance(payload, dict):
        return False
    source = payload.get("source")
    return isinstance(source, dict) and "subagent" in source


def _codex_subagent_head(path: str) -> bool:
    with open(path, "rb") as handle:
        first = handle.readline(1024 * 1024)
    try:
        line = json.loads(first)
    except ValueError:
        return False
    return isinstance(line, dict) and _codex_is_subagent(line)


def _codex_entries(line: dict[str, Any]) -> list[Entry]:
    payload = line.get("payload")
    if not isinstance(payload, dict):
        return []
    kind, inner = line.get("type"), payload.get("type")
    if kind == "event_msg" and inner in ("user_message", "agent_message"):
        text = payload.get("message")
        if not isinstance(text, str):
            return []
        if inner == "user_message":
            text = user_text(text)
            return [Entry("user", text)] if text else []
        return [Entry("assistant", text)] if text.strip() else []
    if kind == "response_item" and inner == "function_call":
        call = f"{payload.get('name')}({payload.get('arguments')})"
        return [Entry("assistant", "", calls=(call,))]
    if kind == "response_item" and inner == "function_call_output":
        output = payload.get("output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return [Entry("tool", text[:TOOL_TEXT_CHARS], "tool")]
    return []
