"""Normalisation before matching: invisible characters removed, NFKC, offsets kept."""

from __future__ import annotations

import unicodedata
from typing import Final

from oharness.notes.secrets.values import _lazy

# Unicode category Cf plus the Default_Ignorable_Code_Point set, written out by hand because
# computing it with unicodedata at import would cost milliseconds on every CLI start. The
# astral part is a separate expression, tried only when the text has astral characters at all:
# a class mixing both planes is checked range by range and is several times slower. No "+":
# a repeated class loses the engine's fast skip over non-matching characters.
_INVISIBLE_BMP_RE: Final = _lazy(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\ufff0-\ufffb]"
)
_ASTRAL_RE: Final = _lazy("[\U00010000-\U0010ffff]")
_INVISIBLE_ASTRAL_RE: Final = _lazy(
    "[\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def _remove_invisible(text: str) -> str:
    text = _INVISIBLE_BMP_RE().sub("", text)
    if _ASTRAL_RE().search(text):
        text = _INVISIBLE_ASTRAL_RE().sub("", text)
    return text


def _normalise(text: str) -> str:
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", _remove_invisible(text))


def _normalise_with_offsets(text: str) -> tuple[str, list[int]]:
    """Character by character normalisation, with each output index's source index."""
    pieces: list[str] = []
    offsets: list[int] = []
    for index, char in enumerate(text):
        if not _remove_invisible(char):
            continue
        piece = char if char.isascii() else unicodedata.normalize("NFKC", char)
        pieces.append(piece)
        offsets.extend([index] * len(piece))
    return "".join(pieces), offsets
