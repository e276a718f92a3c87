"""Decoded views of a text: what base64, HTML entities, percent-encoding, escapes or reversal
hide is scanned too, and a finding is mapped back onto the encoded characters.

Each view is built only when its marker occurs (``&#``, ``%XX``, ``\\u``, a base64 run, a token
prefix written backwards), so ordinary text costs a few substring searches. The views are
one level deep: a secret encoded twice is not looked for.
"""

from __future__ import annotations

import binascii
import functools
import re
from collections.abc import Callable, Iterator
from typing import Final

from oharness.notes.secrets.values import _lazy

_HTML_ENTITY_RE: Final = _lazy(
    r"&#(?:[0-9]{1,7}|[xX][0-9A-Fa-f]{1,6});?|&[A-Za-z][A-Za-z0-9]{1,31};"
)
_PERCENT_RE: Final = _lazy(r"%[0-9A-Fa-f]{2}")
_ESCAPE_RE: Final = _lazy(r"\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\u\{[0-9A-Fa-f]{1,6}\}")
# Standard and URL-safe base64, long enough to hold a token (24 characters: 18 bytes).
# No look-behind: finditer resumes after a whole run, so a match never starts inside one.
_BASE64_RUN_RE: Final = _lazy(r"[A-Za-z0-9+/_\-]{24,}={0,2}")
_UNPRINTABLE_RE: Final = _lazy(r"[^\t\n\r\x20-\x7e]")
_MAX_BASE64_RUN: Final = 16384


class View:
    """A decoded text and, for each of its characters, the span it came from."""

    __slots__ = ("ends", "label", "starts", "text")

    def __init__(self, text: str, starts: list[int], ends: list[int], label: str) -> None:
        self.text = text
        self.starts = starts
        self.ends = ends
        self.label = label

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``text[start:end]`` was decoded from."""
        last = end - 1
        # min and max: a reversed view runs backwards through the original.
        return (
            min(self.starts[start], self.starts[last]),
            max(self.ends[start], self.ends[last]),
        )


def _substituted(text: str, pattern: re.Pattern[str], decode: Callable[[str], str]) -> View:
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for match in pattern.finditer(text):
        start, end = match.span()
        pieces.append(text[position:start])
        starts.extend(range(position, start))
        ends.extend(range(position + 1, start + 1))
        decoded = decode(match.group())
        pieces.append(decoded)
        starts.extend([start] * len(decoded))
        ends.extend([end] * len(decoded))
        position = end
    pieces.append(text[position:])
    starts.extend(range(position, len(text)))
    ends.extend(range(position + 1, len(text) + 1))
    return View("".join(pieces), starts, ends, "encoded")


def _html_entity(entity: str) -> str:
    import html

    return html.unescape(entity if entity.endswith(";") else entity + ";")


def _code_point(escape: str) -> str:
    digits = escape[2:].strip("{}")
    value = int(digits, 16)
    return chr(value) if value < 0x110000 else ""


def _base64_text(run: str) -> str | None:
    """The text a base64 run decodes to, when it is printable ASCII (never binary data)."""
    body = run.rstrip("=").replace("-", "+").replace("_", "/")
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    try:
        raw = binascii.a2b_base64(body + "=" * (-len(body) % 4))
    except binascii.Error:
        return None
    if len(raw) < 12 or not raw.isascii():
        return None
    decoded = raw.decode("ascii")
    return None if _UNPRINTABLE_RE().search(decoded) else decoded


def long_pieces(text: str, size: int) -> list[tuple[int, str]]:
    """``(offset, piece)`` for each whitespace-separated piece of ``size`` characters or more
    (16 at least).

    Splitting is done in C and most pieces of prose are short, so a pattern that needs a long
    run is tried on a few pieces instead of at every position of the text. Several rules ask
    about the same text, so the split is kept for the last few texts.
    """
    return [(offset, piece) for offset, piece in _pieces_of_16(text) if len(piece) >= size]


@functools.lru_cache(maxsize=8)
def _pieces_of_16(text: str) -> tuple[tuple[int, str], ...]:
    found: list[tuple[int, str]] = []
    position = 0
    for piece in text.split():
        if len(piece) >= 16:
            start = text.find(piece, position)
            found.append((start, piece))
            position = start + len(piece)
    return tuple(found)


def _base64_views(text: str) -> Iterator[View]:
    for offset, piece in long_pieces(text, 24):
        yield from _base64_piece_views(piece, offset)


def _base64_piece_views(piece: str, offset: int) -> Iterator[View]:
    for match in _BASE64_RUN_RE().finditer(piece):
        run = match.group()
        if len(run) > _MAX_BASE64_RUN or run.isalpha() or run.isdigit():
            continue
        decoded = _base64_text(run)
        if decoded is not None:
            start, end = offset + match.start(), offset + match.end()
            yield View(decoded, [start] * len(decoded), [end] * len(decoded), "base64-encoded")


def decoded_views(text: str, exact: bytes, reversed_hints: tuple[bytes, ...]) -> Iterator[View]:
    """Every decoded view of ``text`` (``exact``: its ASCII byte copy) worth scanning."""
    if b"&#" in exact or (b"&" in exact and _HTML_ENTITY_RE().search(text)):
        yield _substituted(text, _HTML_ENTITY_RE(), _html_entity)
    if b"%" in exact and _PERCENT_RE().search(text):
        yield _substituted(text, _PERCENT_RE(), lambda code: chr(int(code[1:], 16)))
    if b"\\u" in exact or b"\\x" in exact:
        yield _substituted(text, _ESCAPE_RE(), _code_point)
    yield from _base64_views(text)
    if any(map(exact.__contains__, reversed_hints)):
        size = len(text)
        backwards = text[::-1]
        yield View(
            backwards,
            [size - i - 1 for i in range(size)],
            [size - i for i in range(size)],
            "reversed",
        )
