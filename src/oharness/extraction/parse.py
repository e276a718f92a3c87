"""The model's answer, parsed as untrusted input.

The answer should be one JSON object ``{"new": [...], "updates": [...]}``. It is read
defensively: prose or a code fence around the object is skipped; bytes that are not UTF-8 and
lone surrogates become U+FFFD; control characters are removed; unknown keys are ignored; each
entry is checked with the rules of ``remember`` (summary, body size, type, tags, id) and an
entry that fails is dropped with its reason while the others go on; credentials are redacted
(02.2), never a reason to refuse the batch. Only an answer with no such object at all is an
error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oharness.errors import OHarnessError, ValidationError
from oharness.memory.memory_service import UNSET, Unset
from oharness.notes.ids import (
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_id,
    check_type,
    clean_body,
    clean_summary,
    clean_tags,
)
from oharness.notes.invisible import remove_invisible
from oharness.notes.secrets import redact_secrets
from oharness.types import Scope, parse_scope

MAX_ANSWER_CHARS: Final = 1_000_000
_OBJECT_ATTEMPTS: Final = 64
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_FENCE: Final = re.compile(r"```[a-zA-Z0-9_-]*\n(.*?)```", re.DOTALL)
_NEW_KEYS: Final = frozenset({"summary", "body", "tags", "type", "scope"})
_UPDATE_KEYS: Final = frozenset({"id", "summary", "body", "tags", "type"})


@dataclass(frozen=True)
class NewEntry:
    """A new note the model proposes; ``position`` is its number in ``[[new:N]]`` links."""

    position: int
    summary: str
    body: str
    tags: tuple[str, ...]
    type: str | None
    scope: Scope | None
    redacted: bool = False


@dataclass(frozen=True)
class UpdateEntry:
    """A replacement body (and optionally summary, tags, type) for an existing note."""

    id: str
    body: str
    summary: str | None
    tags: tuple[str, ...] | Unset
    type: str | Unset | None
    redacted: bool = False


@dataclass(frozen=True)
class Dropped:
    """An entry left out, and why (``entry``: ``new 3``, ``update 2``…)."""

    entry: str
    reason: str
    summary: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"entry": self.entry, "reason": self.reason, "summary": self.summary}


@dataclass
class ParsedAnswer:
    """What survived parsing, what did not, and the keys that were ignored."""

    new: list[NewEntry] = field(default_factory=list)
    updates: list[UpdateEntry] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    ignored_keys: set[str] = field(default_factory=set)
    #: summaries of new entries that were dropped, by position (for their ``[[new:N]]`` links)
    dropped_new: dict[int, str | None] = field(default_factory=dict)


def clean_text(text: str) -> str:
    """Lone surrogates become U+FFFD; control characters other than tab and newline go."""
    return _CONTROL.sub("", _SURROGATE.sub("\ufffd", text.replace("\r\n", "\n")))


def _decode(raw: str | bytes) -> str:
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    return raw


def _is_answer(value: Any) -> bool:
    return isinstance(value, dict) and ("new" in value or "updates" in value)


def find_answer_object(text: str) -> dict[str, Any]:
    """The answer object in ``text``: the whole text, a fenced block, or the first ``{…}``."""
    stripped = text.strip()
    candidates = [stripped, *(match.group(1).strip() for match in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if _is_answer(value):
            return dict(value)
    decoder = json.JSONDecoder()
    start = text.find("{")
    attempts = 0
    while start != -1 and attempts < _OBJECT_ATTEMPTS:
        attempts += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if _is_answer(value):
            return dict(value)
        start = text.find("{", start + 1)
    raise ValidationError(
        'the model did not answer with a JSON object holding "new" or "updates"; nothing was '
        "saved (a model that follows instructions better, or structured output, helps)",
        field="answer",
    )


def _string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        kind = "missing" if value is None else f"a {type(value).__name__}, not a string"
        raise ValidationError(f"{name} is {kind}", field=name)
    return clean_text(value)


def _redact(text: str) -> tuple[str, bool]:
    redacted = redact_secrets(text)
    return redacted, redacted != text


def _tags(value: Any) -> tuple[tuple[str, ...], bool]:
    """Checked tags, and whether one that looks like a credential was left out; tags over
    the limits of a write (:data:`~oharness.notes.ids.MAX_TAGS`,
    :data:`~oharness.notes.ids.MAX_TAG_CHARS`) are left out too, rather than the note."""
    if value is None:
        return (), False
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError("tags must be a list of strings", field="tags")
    kept = [remove_invisible(clean_text(tag)) for tag in value if redact_secrets(tag) == tag]
    tags = tuple(tag for tag in clean_tags(kept) if len(tag) <= MAX_TAG_CHARS)[:MAX_TAGS]
    return tags, len(kept) != len(value)


def _fields(entry: Mapping[str, Any], max_body_bytes: int) -> tuple[str, str, bool]:
    summary, cut_summary = _redact(_string(entry.get("summary"), "summary"))
    body, cut_body = _redact(_string(entry.get("body"), "body"))
    summary = remove_invisible(summary)  # a model's stray zero-width space loses no memory
    return clean_summary(summary), clean_body(body, max_body_bytes), cut_summary or cut_body


def _new_entry(position: int, entry: Mapping[str, Any], max_body_bytes: int) -> NewEntry:
    summary, body, redacted = _fields(entry, max_body_bytes)
    tags, cut_tags = _tags(entry.get("tags"))
    scope_value = entry.get("scope")
    scope = None if scope_value is None else parse_scope(_string(scope_value, "scope"))
    return NewEntry(
        position, summary, body, tags, check_type(entry.get("type")), scope, redacted or cut_tags
    )


def _update_entry(entry: Mapping[str, Any], max_body_bytes: int) -> UpdateEntry:
    note_id = check_id(entry.get("id"))
    body, redacted = _redact(_string(entry.get("body"), "body"))
    summary: str | None = None
    if entry.get("summary") is not None:
        text, cut = _redact(_string(entry["summary"], "summary"))
        summary, redacted = clean_summary(remove_invisible(text)), redacted or cut
    tags: tuple[str, ...] | Unset = UNSET
    if "tags" in entry:
        tags, cut_tags = _tags(entry["tags"])
        redacted = redacted or cut_tags
    note_type: str | Unset | None = check_type(entry["type"]) if "type" in entry else UNSET
    return UpdateEntry(
        note_id, clean_body(body, max_body_bytes), summary, tags, note_type, redacted
    )


def _summary_of(entry: Any) -> str | None:
    if isinstance(entry, Mapping) and isinstance(entry.get("summary"), str):
        return clean_text(entry["summary"])[:200]
    return None


def _entries(answer: Mapping[str, Any], key: str, parsed: ParsedAnswer) -> list[Any]:
    value = answer.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        parsed.dropped.append(Dropped(key, f'"{key}" is not a list; all of it was left out'))
        return []
    return value


def parse_answer(
    raw: str | bytes, *, max_body_bytes: int, max_new: int, max_updates: int
) -> ParsedAnswer:
    """The valid entries of an answer and the reasons for the others (see the module notes)."""
    text = _decode(raw)
    if len(text) > MAX_ANSWER_CHARS:
        raise ValidationError(
            f"the model's answer is {len(text)} characters (at most {MAX_ANSWER_CHARS}); "
            "nothing was saved",
            field="answer",
        )
    answer = find_answer_object(clean_text(text))
    parsed = ParsedAnswer(ignored_keys={str(key) for key in answer} - {"new", "updates"})
    for position, entry in enumerate(_entries(answer, "new", parsed), start=1):
        where = f"new {position}"
        try:
            if not isinstance(entry, Mapping):
                raise ValidationError("not a JSON object")
            parsed.ignored_keys.update(f"{where}.{key}" for key in set(entry) - _NEW_KEYS)
            if len(parsed.new) >= max_new:
                raise ValidationError(f"over the limit of {max_new} new notes per pass")
            parsed.new.append(_new_entry(position, entry, max_body_bytes))
        except OHarnessError as exc:
            parsed.dropped.append(Dropped(where, exc.message, _summary_of(entry)))
            parsed.dropped_new[position] = _summary_of(entry)
    for position, entry in enumerate(_entries(answer, "updates", parsed), start=1):
        where = f"update {position}"
        try:
            if not isinstance(entry, Mapping):
                raise ValidationError("not a JSON object")
            parsed.ignored_keys.update(f"{where}.{key}" for key in set(entry) - _UPDATE_KEYS)
            if len(parsed.updates) >= max_updates:
                raise ValidationError(f"over the limit of {max_updates} updates per pass")
            parsed.updates.append(_update_entry(entry, max_body_bytes))
        except OHarnessError as exc:
            parsed.dropped.append(Dropped(where, exc.message, _summary_of(entry)))
    return parsed
