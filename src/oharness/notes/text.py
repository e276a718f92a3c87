"""Characters a note may hold, and showing untrusted text on a terminal safely.

A note's summary and tags hold no control characters at all; a body may hold tab and newline
(``\\r\\n`` is turned into ``\\n`` first). "Control character" means Unicode category ``Cc``
(C0, DEL and C1). Lone surrogates (``\\ud800``…) cannot be written as UTF-8 and are refused
everywhere. The same rules apply to what we write (a clear refusal) and to what we read (a file
breaking them is a parse problem of that file, reported by ``doctor``, never loaded).
"""

from __future__ import annotations

import re
from typing import Any, Final

from oharness.notes.invisible import escape_invisible

_CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_BODY_CONTROL_RE: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE_RE: Final = re.compile(r"[\ud800-\udfff]")
# What a terminal would act on: every control character but newline and tab, plus the
# invisible bidi controls that can reorder what a person reads.
_TERMINAL_UNSAFE_RE: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_UNSAFE_RE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def character_problem(value: str, *, body: bool = False) -> str | None:
    """Why ``value`` may not be stored in a note field, or ``None`` when it may.

    With ``body``, tab and newline are allowed. The reason names the first bad character by
    its code point and position (1-based line and column), never prints it raw.
    """
    match = _SURROGATE_RE.search(value)
    kind = "an unpaired surrogate"
    if match is None:
        match = (_BODY_CONTROL_RE if body else _CONTROL_RE).search(value)
        kind = "a control character"
    if match is None:
        return None
    start = match.start()
    line = value.count("\n", 0, start) + 1
    column = start - (value.rfind("\n", 0, start) + 1) + 1
    point = ord(match.group())
    code = f"U+{point:04X}"
    if 0xDC80 <= point <= 0xDCFF:  # how Python carries a byte that was not UTF-8
        kind, code = "a byte that is not UTF-8", f"0x{point - 0xDC00:02X}"
    return f"{kind} ({code}) at line {line}, column {column}"


def has_surrogates(value: Any) -> bool:
    """True when a JSON value (strings, lists, objects, at any depth) holds a lone surrogate."""
    if isinstance(value, str):
        return _SURROGATE_RE.search(value) is not None
    if isinstance(value, list):
        return any(has_surrogates(item) for item in value)
    if isinstance(value, dict):
        return any(has_surrogates(key) or has_surrogates(item) for key, item in value.items())
    return False


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, *, multiline: bool = True) -> str:
    """``text`` with what a terminal would act on, and every invisible character
    (:mod:`oharness.notes.invisible`), shown as ``\\xNN`` / ``\\uNNNN`` escapes.

    Newline and tab pass when ``multiline`` (a body); otherwise (one line of a listing) they
    are escaped too. Lone surrogates become ``\\udNNN`` so printing never fails.
    """
    pattern = _TERMINAL_UNSAFE_RE if multiline else _LINE_UNSAFE_RE
    text = pattern.sub(_escape, text)
    if _SURROGATE_RE.search(text):
        text = _SURROGATE_RE.sub(_escape, text)
    return escape_invisible(text)  # zero-width, tag characters…: what a reader cannot see
