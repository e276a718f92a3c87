"""Note ids, summaries, tags and types: the validation and generation rules of spec 01.1."""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Iterable
from typing import Final

from oharness.errors import ValidationError
from oharness.notes.invisible import invisible_problem
from oharness.notes.text import character_problem
from oharness.types import NOTE_TYPES, HexSource

ID_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
MAX_SUMMARY_CHARS: Final = 200
#: Tags a write may give a note, and characters per tag: names a search would use, not text.
MAX_TAGS: Final = 32
MAX_TAG_CHARS: Final = 64
MAX_SLUG_CHARS: Final = 48
_TAG_SPLIT: Final = re.compile(r"[,\s]+")
_ASCII_UPPER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def is_valid_id(value: str) -> bool:
    """True when ``value`` is a well-formed note id (always a safe file name)."""
    return ID_PATTERN.fullmatch(value) is not None


def check_id(value: object) -> str:
    """Return ``value`` if it is a valid id, else raise a :class:`ValidationError`."""
    if not isinstance(value, str) or not is_valid_id(value):
        raise ValidationError(
            f"invalid note id {value!r}: an id is 1-128 letters, digits, '-' or '_', starting "
            "with a letter or digit (no dots, slashes or spaces)",
            field="id",
        )
    return value


def random_hex(count: int) -> str:
    """``count`` random lower-case hex characters from the OS's secure source."""
    return secrets.token_hex((count + 1) // 2)[:count]


def _script(char: str) -> str:
    """``word`` for Han and Hangul (a syllable each), ``kana``, or ``inline`` (letters)."""
    name = unicodedata.name(char, "")
    if name.startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "HANGUL")):
        return "word"
    if name.startswith(("HIRAGANA", "KATAKANA")):
        return "kana"
    return "inline"


def transliterate(text: str) -> str:
    """``text`` in ASCII: accents dropped, other scripts romanised with ``anyascii`` (ISC).

    部署流程 → ``Bu Shu Liu Cheng``, テストはpytest → ``tesutoha pytest``, 배포 → ``Bae Po``,
    Größe → ``Grosse``, Деплой → ``Deploi``. A Han or Hangul syllable is a word of its own; a
    run of kana is one word. ``anyascii`` is imported only for text that needs it (~15 ms).
    """
    if text.isascii():
        return text
    from anyascii import anyascii

    pieces: list[str] = []
    for char in unicodedata.normalize("NFC", text):
        if char.isascii():
            pieces.append(char)
            continue
        stripped = "".join(
            part for part in unicodedata.normalize("NFKD", char) if not unicodedata.combining(part)
        )
        if stripped.isascii():  # an accented or compatibility letter: é → e, ℌ → H
            pieces.append(stripped)
            continue
        script = _script(char)
        romanised = anyascii(char)
        if script == "word":
            romanised = f" {romanised} "
        elif script == "kana":
            romanised = f"\0{romanised}\0"  # word breaks where the kana run meets other text
        pieces.append(romanised)
    return "".join(pieces).replace("\0\0", "").replace("\0", " ")


def slugify(summary: str) -> str:
    """The id stem of a summary: its letters and digits in ASCII, words joined by '-'."""
    words = re.findall(r"[a-z0-9]+", transliterate(summary).lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > MAX_SLUG_CHARS:
            if not slug:
                slug = word[:MAX_SLUG_CHARS]
            break
        slug = candidate
    return slug or "note"


def generate_id(summary: str, hex_source: HexSource = random_hex) -> str:
    """A new id for a note with this summary: ``<slug>-<3 hex>``, e.g. ``deploys-tuesday-3fa``."""
    return f"{slugify(summary)}-{hex_source(3)}"


def clean_summary(value: object) -> str:
    """Trim a summary (in NFC: the same text typed on any system is one summary) and check it
    is one line of 1-200 characters."""
    if not isinstance(value, str):
        raise ValidationError("summary must be a string", field="summary")
    summary = unicodedata.normalize("NFC", value.strip())
    if not summary:
        raise ValidationError("summary is empty: give the note a one-line summary", field="summary")
    if "\n" in summary or "\r" in summary:
        raise ValidationError(
            "summary has a line break: a summary is one line; put details in the body",
            field="summary",
        )
    problem = character_problem(summary)
    if problem is not None:
        raise ValidationError(
            f"summary has {problem}: remove it (a summary is plain text on one line)",
            field="summary",
        )
    problem = invisible_problem(summary)
    if problem is not None:
        raise ValidationError(
            f"summary has {problem}: remove it (it can make the summary read as something else)",
            field="summary",
        )
    if len(summary) > MAX_SUMMARY_CHARS:
        raise ValidationError(
            f"summary is {len(summary)} characters: at most {MAX_SUMMARY_CHARS}; "
            "shorten it and put details in the body",
            field="summary",
        )
    return summary


def split_tags(value: str | Iterable[str] | None) -> list[str]:
    """The tags as given, split on commas and whitespace, empties dropped, case kept.

    The credential check runs on these: lower-casing first would hide an AWS key or a JWT.
    """
    if value is None:
        return []
    if not isinstance(value, str | list | tuple):  # a number, a mapping: never read as tags
        raise ValidationError("tags must be a list of strings or a string", field="tags")
    items: Iterable[object] = [value] if isinstance(value, str) else value
    parts: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValidationError("tags must be strings", field="tags")
        # Tab and line breaks separate tags; every other control character is refused.
        problem = character_problem(item.replace("\r", "\n"), body=True)
        if problem is not None:
            raise ValidationError(f"tags have {problem}: remove it", field="tags")
        for part in _TAG_SPLIT.split(item):
            # Each tag on its own: a selector after a comma would stand alone once split.
            problem = invisible_problem(part)
            if problem is not None:
                number = len(parts) + 1
                raise ValidationError(f"tag {number} has {problem}: remove it", field="tags")
            if part:
                parts.append(part)
    return parts


def clean_tags(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """Split on commas and whitespace, trim, lower-case ASCII, NFC, drop empties, dedupe in
    order."""
    cleaned: list[str] = []
    seen: set[str] = set()
    for part in split_tags(value):
        tag = unicodedata.normalize("NFC", part.translate(_ASCII_UPPER))
        if tag not in seen:
            seen.add(tag)
            cleaned.append(tag)
    return tuple(cleaned)


def checked_tags(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """:func:`clean_tags` for a write: at most :data:`MAX_TAGS` of at most
    :data:`MAX_TAG_CHARS` characters (a note read from disk keeps what it holds)."""
    tags = clean_tags(value)
    if len(tags) > MAX_TAGS:
        raise ValidationError(
            f"{len(tags)} tags: at most {MAX_TAGS}; keep the few names a search would use",
            field="tags",
        )
    longest = max(map(len, tags), default=0)
    if longest > MAX_TAG_CHARS:
        raise ValidationError(
            f"a tag of {longest} characters: at most {MAX_TAG_CHARS}; a tag is a name, put the "
            "text in the body",
            field="tags",
        )
    return tags


def check_type(value: object) -> str | None:
    """Return a valid note type (or ``None`` for no type), else raise."""
    if value is None:
        return None
    if isinstance(value, str) and value in NOTE_TYPES:
        return value
    raise ValidationError(
        f"unknown note type {value!r}: use one of {', '.join(NOTE_TYPES)}, or leave it out",
        field="type",
    )


def clean_body(value: object, max_bytes: int) -> str:
    """Normalise line endings (ending in one), check non-empty and within ``max_bytes``."""
    from oharness.errors import LimitError

    if not isinstance(value, str):
        raise ValidationError("body must be a string", field="body")
    body = value.replace("\r\n", "\n")
    if body and not body.endswith("\n"):
        body += "\n"  # files end with a newline; an update repeating the same text is no change
    if not body.strip():
        raise ValidationError("body is empty: say what the note records", field="body")
    problem = character_problem(body, body=True)
    if problem is not None:
        raise ValidationError(
            f"body has {problem}: remove it (a body may hold tabs and line breaks, no other "
            "control characters)",
            field="body",
        )
    size = len(body.encode("utf-8"))
    if size > max_bytes:
        raise LimitError(
            f"body is {size} bytes: at most {max_bytes} (memory.maxNoteBytes); split it into "
            "several linked notes",
            field="body",
            limit=max_bytes,
        )
    return body
