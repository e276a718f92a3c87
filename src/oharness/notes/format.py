"""The note file format (spec 01.1) and its content hash (spec 01.2).

A note file is a JSON object between two ``---`` lines, then a Markdown body::

    ---
    {"id":"pricing-borderless-3fa","summary":"...","type":"feedback","tags":["design"],...}
    ---
    Body text.

We write one line of compact JSON with the keys in a fixed order and unknown keys after them;
we read any JSON object (pretty-printed, any key order) and accept ``\\r\\n`` line endings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Final

from oharness.errors import NoteFormatError
from oharness.notes.ids import is_valid_id
from oharness.notes.text import character_problem, has_surrogates

KNOWN_KEYS: Final[tuple[str, ...]] = ("id", "summary", "type", "tags", "createdAt", "updatedAt")
_DELIMITER: Final = "---"


@dataclass(frozen=True)
class Note:
    """One note as stored. ``extra`` holds unknown frontmatter keys in their original order."""

    id: str
    summary: str
    body: str
    tags: tuple[str, ...] = ()
    type: str | None = None
    created_at: int = 0
    updated_at: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def with_changes(self, **changes: Any) -> Note:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    @cached_property
    def content_hash(self) -> str:
        """``sha256:<hex>`` over id, summary, tags, body and type (when present)."""
        return content_hash(self)

    @cached_property
    def content_hash_without_id(self) -> str:
        """The same digest without ``id``: equal for the same content under another id."""
        return content_hash(self, with_id=False)


def content_hash(note: Note, *, with_id: bool = True) -> str:
    """The content hash of spec 01.2 (type hashed only when present)."""
    obj: dict[str, Any] = {"summary": note.summary, "tags": list(note.tags), "body": note.body}
    if with_id:
        obj["id"] = note.id
    if note.type is not None:
        obj["type"] = note.type
    canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def file_revision(data: bytes) -> str:
    """The first 32 hex digits of SHA-256 over a file's bytes exactly as stored (spec 06.1)."""
    return hashlib.sha256(data).hexdigest()[:32]


def frontmatter_dict(note: Note) -> dict[str, Any]:
    """The frontmatter object in write order: known keys first, then unknown ones."""
    obj: dict[str, Any] = {"id": note.id, "summary": note.summary}
    if note.type is not None:
        obj["type"] = note.type
    obj["tags"] = list(note.tags)
    obj["createdAt"] = note.created_at
    obj["updatedAt"] = note.updated_at
    for key, value in note.extra.items():
        if key not in obj:
            obj[key] = value
    return obj


def serialise_note(note: Note) -> str:
    """The exact file text we write for ``note`` (``\\n`` line endings, compact JSON)."""
    head = json.dumps(frontmatter_dict(note), separators=(",", ":"), ensure_ascii=False)
    return f"{_DELIMITER}\n{head}\n{_DELIMITER}\n{note.body}"


def serialise_note_bytes(note: Note) -> bytes:
    """:func:`serialise_note` encoded as UTF-8."""
    return serialise_note(note).encode("utf-8")


def _split(text: str) -> tuple[str, str]:
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n")
    if not text.startswith(_DELIMITER + "\n"):
        raise NoteFormatError("the file does not start with a '---' line", reason="no_frontmatter")
    rest = text[len(_DELIMITER) + 1 :]
    # JSON strings cannot hold a raw newline, so the first line that is exactly '---'
    # closes the frontmatter.
    if rest.startswith(_DELIMITER + "\n") or rest == _DELIMITER:
        raise NoteFormatError("the frontmatter is empty", reason="empty_frontmatter")
    marker = "\n" + _DELIMITER + "\n"
    end = rest.find(marker)
    if end < 0:
        if rest.endswith("\n" + _DELIMITER):
            return rest[: -len(_DELIMITER) - 1], ""
        raise NoteFormatError(
            "the frontmatter is not closed by a '---' line", reason="unclosed_frontmatter"
        )
    return rest[:end], rest[end + len(marker) :]


def _time(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    if isinstance(value, float) and not value.is_integer():
        return default
    return int(value)


def _check_characters(obj: dict[str, Any], summary: str, tags: list[str], body: str) -> None:
    """Control characters and lone surrogates make the file a parse problem, never a crash."""
    problem = character_problem(summary) or next(
        (found for tag in tags if (found := character_problem(tag))), None
    )
    if problem is not None:
        raise NoteFormatError(f"the frontmatter holds {problem}", reason="invalid_characters")
    problem = character_problem(body, body=True)
    if problem is not None:
        raise NoteFormatError(f"the body holds {problem}", reason="invalid_characters")
    if has_surrogates(obj):
        raise NoteFormatError(
            "the frontmatter holds an unpaired surrogate (a \\ud800-style escape, left by text "
            "cut inside an emoji); remove it",
            reason="invalid_characters",
        )


#: A frontmatter whose first line is ``key: value`` (YAML), not JSON.
_YAML_LINE: Final = re.compile(r"\s*[A-Za-z_][\w -]*:(\s|$)")


def parse_note(text: str, *, default_time: int = 0, default_id: str | None = None) -> Note:
    """Parse a note file's text. Missing or invalid times fall back to ``default_time``; a
    missing id to ``default_id`` (a text merged by hand for a known note)."""
    head, body = _split(text)
    try:
        obj = json.loads(head)
    except json.JSONDecodeError as exc:
        if _YAML_LINE.match(head.lstrip("\ufeff")):
            raise NoteFormatError(
                "the frontmatter is YAML (as Obsidian and other tools write it), not JSON",
                reason="invalid_json",
            ) from exc
        message = exc.msg.removesuffix(" at")  # "Unterminated string starting at"
        raise NoteFormatError(
            f"the frontmatter is not valid JSON ({message} at line {exc.lineno + 1})",
            reason="invalid_json",
        ) from exc
    if not isinstance(obj, dict):
        raise NoteFormatError("the frontmatter is not a JSON object", reason="not_an_object")
    note_id = obj.get("id", default_id)
    if not isinstance(note_id, str) or not is_valid_id(note_id):
        raise NoteFormatError(
            f"the frontmatter id {json.dumps(note_id, ensure_ascii=False)} is missing or invalid",
            reason="invalid_id",
        )
    summary = obj.get("summary")
    if not isinstance(summary, str) or not summary.strip() or "\n" in summary:
        raise NoteFormatError(
            "the summary is missing, empty or spans several lines", reason="invalid_summary"
        )
    tags = obj.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise NoteFormatError("tags must be a list of strings", reason="invalid_tags")
    note_type = obj.get("type")
    if note_type is not None and not isinstance(note_type, str):
        raise NoteFormatError("type must be a string", reason="invalid_type")
    _check_characters(obj, summary, tags, body)
    return Note(
        id=note_id,
        summary=summary,
        body=body,
        tags=tuple(tags),
        type=note_type,
        created_at=_time(obj.get("createdAt"), default_time),
        updated_at=_time(obj.get("updatedAt"), default_time),
        extra={key: value for key, value in obj.items() if key not in KNOWN_KEYS},
    )


def parse_note_bytes(data: bytes, *, default_time: int = 0, default_id: str | None = None) -> Note:
    """Parse a note file's bytes (UTF-8, an optional BOM is accepted)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NoteFormatError(
            f"the file is not valid UTF-8 (byte {exc.start})", reason="not_utf8"
        ) from exc
    return parse_note(text, default_time=default_time, default_id=default_id)
