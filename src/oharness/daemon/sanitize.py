"""Error details safe to send and log (spec 10.1, 02.2): credentials redacted, control
characters replaced, at most 1,000 characters.

Control and invisible characters (zero-width, bidi controls, BOM) are removed *before*
redaction, so a token split by them is still found; line breaks and tabs become spaces.
Cutting is by code points, so a character outside the BMP is never split.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from oharness.notes.secrets import redact_secrets

MAX_DETAIL_CHARS: Final = 1000
_SPACES: Final = frozenset("\t\n\r\x0b\x0c\x85\u2028\u2029")
#: A bearer token glued to its keyword once an invisible separator is removed.
_GLUED_BEARER: Final = re.compile(r"(?i)\bbearer(?=[A-Za-z0-9._~+/-]{16,})[A-Za-z0-9._~+/-]+=*")


def _visible(char: str) -> str:
    if char in _SPACES:
        return " "
    category = unicodedata.category(char)
    if category in ("Cc", "Cf", "Cs", "Co", "Cn") or char == "\ufeff":
        return ""
    return char


def sanitise_details(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """``text`` with credentials redacted, control characters gone, cut to ``limit``."""
    cleaned = "".join(_visible(char) for char in text)
    redacted = _GLUED_BEARER.sub("Bearer [REDACTED]", redact_secrets(cleaned))
    if len(redacted) <= limit:
        return redacted
    return redacted[: limit - 1] + "…"
