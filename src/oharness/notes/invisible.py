"""Invisible characters: refused in summaries and tags, shown escaped wherever a body is shown.

The Trojan Source trick: bidirectional controls (U+202A–U+202E, U+2066–U+2069, and the marks
U+200E, U+200F, U+061C) reorder what a person reads, and other invisible characters (zero-width
space, word joiner, soft hyphen, BOM, tag characters, Hangul fillers, variation selectors
used to smuggle bytes…) hide text from the reader but not from a model. "Invisible" here is
Unicode's format category (Cf) and its default-ignorable code points, with three exceptions
that real text needs, each only where it does its job:

- zero-width joiner and non-joiner (U+200D, U+200C) between two visible non-ASCII characters
  (emoji sequences such as 👩‍💻, Persian and Indic words);
- one variation selector (U+FE00–U+FE0F, U+E0100–U+E01EF) right after a visible character
  (❤️, the keycap 1️⃣, an ideographic variant);
- tag characters inside an emoji tag sequence (🏴 + tags + U+E007F: the flags of Scotland,
  England, Wales).

A summary or a tag holding one is refused (the reason names the character); ids are ASCII
letters, digits, ``-`` and ``_`` only, so they cannot hold one. A body keeps them (code about
this very trick, text pasted from elsewhere), but wherever a body or a summary is put in front
of a model or on the Memory page, each is shown as ``\\uXXXX``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Final

# Cf and the default-ignorable code points, written out (computing them at import would cost
# milliseconds on every CLI start), less the Arabic and Kaithi number signs, which are drawn.
_CANDIDATE_RE: Final = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_JOINERS: Final = frozenset("\u200c\u200d")
_FLAG: Final = "\U0001f3f4"
_TAG_SEQUENCE_RE: Final = re.compile("\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f")


def _is_selector(char: str) -> bool:
    point = ord(char)
    return 0xFE00 <= point <= 0xFE0F or 0xE0100 <= point <= 0xE01EF


def _visible(char: str) -> bool:
    return not char.isspace() and _CANDIDATE_RE.fullmatch(char) is None


def _joins(text: str, index: int) -> bool:
    """A joiner between two visible non-ASCII characters (one selector may come before it)."""
    before = index - 1
    if before >= 0 and _is_selector(text[before]):
        before -= 1
    after = index + 1
    if before < 0 or after >= len(text):
        return False
    return all(not char.isascii() and _visible(char) for char in (text[before], text[after]))


def _tag_sequences(text: str) -> set[int]:
    if _FLAG not in text:
        return set()
    inside: set[int] = set()
    for match in _TAG_SEQUENCE_RE.finditer(text):
        inside.update(range(match.start() + 1, match.end()))
    return inside


def invisible_positions(text: str) -> Iterator[int]:
    """The index of every invisible character of ``text`` not doing a job (see the module)."""
    if text.isascii():
        return
    tags: set[int] | None = None
    for match in _CANDIDATE_RE.finditer(text):
        index, char = match.start(), match.group()
        if char in _JOINERS and _joins(text, index):
            continue
        if _is_selector(char) and index > 0 and _visible(text[index - 1]):
            continue
        if 0xE0020 <= ord(char) <= 0xE007F:
            tags = _tag_sequences(text) if tags is None else tags
            if index in tags:
                continue
        yield index


def _name(char: str) -> str:
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name}" if name else f"U+{ord(char):04X}"


def invisible_problem(value: str) -> str | None:
    """Why ``value`` may not be a summary or a tag (an invisible character), or ``None``."""
    for index in invisible_positions(value):
        char = value[index]
        return f"an invisible character ({_name(char)}) at column {index + 1}"
    return None


def escape_invisible(text: str) -> str:
    """``text`` with each invisible character shown as ``\\uXXXX`` (``\\UXXXXXXXX`` astral)."""
    positions = set(invisible_positions(text))
    if not positions:
        return text
    return "".join(_escape(char) if i in positions else char for i, char in enumerate(text))


def remove_invisible(text: str) -> str:
    """``text`` without its invisible characters (a model's summary or tag, cleaned)."""
    positions = set(invisible_positions(text))
    if not positions:
        return text
    return "".join(char for i, char in enumerate(text) if i not in positions)


def _escape(char: str) -> str:
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"
