"""Normalisation before matching: invisible characters and combining marks removed, NFKD,
Latin lookalikes mapped back to ASCII inside words that mix scripts, offsets kept."""

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
# The combining marks that decorate Latin letters (accents, strokes and overlays: g̶h̶p̶_…),
# removed after NFKD has split accented letters into letter + mark.
_COMBINING_RE: Final = _lazy(
    "[\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
)
# Letters of other scripts drawn like Latin ones (Unicode's confusables, the common part):
# Cyrillic, Greek, Armenian and a few Latin variants. Mapped only inside a word that also
# holds an ASCII letter or digit (ghр_… with a Cyrillic "р"), so Russian or Greek prose is
# left as it is.
_LOOKALIKE_PAIRS: Final = (
    "аa еe оo рp сc уy хx іi јj ѕs һh ԁd ԛq ԝw ӏl кk мm тt вb "  # Cyrillic
    "АA ВB ЕE КK МM НH ОO РP СC ТT ХX УY ІI ЈJ ЅS ԚQ ԜW ҮY ӀI "
    "ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX οo νv αa ιi ρp υu χx "  # Greek
    "օo սu ցg հh յj ոn ɡg ıi ⅼl"  # Armenian, Latin variants
)
_LOOKALIKES: Final = {pair[0]: pair[1] for pair in _LOOKALIKE_PAIRS.split()}
_LOOKALIKE_TABLE: Final = str.maketrans(_LOOKALIKES)
_LOOKALIKE_CLASS: Final = "".join(sorted(_LOOKALIKES))
_LOOKALIKE_RE: Final = _lazy(f"[{_LOOKALIKE_CLASS}]")
_WORD_RE: Final = _lazy(r"[\w\-]+")
_ASCII_ALNUM_RE: Final = _lazy(r"[A-Za-z0-9]")


def _remove_invisible(text: str) -> str:
    text = _INVISIBLE_BMP_RE().sub("", text)
    if _ASTRAL_RE().search(text):
        text = _INVISIBLE_ASTRAL_RE().sub("", text)
    return text


def _map_lookalikes(text: str) -> str:
    """Lookalike letters mapped to ASCII inside mixed-script words (length preserved).

    Words are found by a linear scan, and only when a lookalike occurs at all: a pattern
    asking for "a word holding both" backtracks over long runs of CJK text.
    """
    if _LOOKALIKE_RE().search(text) is None:
        return text
    pieces: list[str] = []
    position = 0
    for match in _WORD_RE().finditer(text):
        word = match.group()
        if _LOOKALIKE_RE().search(word) and _ASCII_ALNUM_RE().search(word):
            pieces.append(text[position : match.start()])
            pieces.append(word.translate(_LOOKALIKE_TABLE))
            position = match.end()
    pieces.append(text[position:])
    return "".join(pieces)


def _normalise(text: str) -> str:
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", _remove_invisible(text))
    return _map_lookalikes(_COMBINING_RE().sub("", decomposed))


def _normalise_with_offsets(text: str) -> tuple[str, list[int]]:
    """Character by character normalisation, with each output index's source index."""
    pieces: list[str] = []
    offsets: list[int] = []
    for index, char in enumerate(text):
        if not _remove_invisible(char):
            continue
        piece = char if char.isascii() else unicodedata.normalize("NFKD", char)
        piece = _COMBINING_RE().sub("", piece)
        pieces.append(piece)
        offsets.extend([index] * len(piece))
    return _map_lookalikes("".join(pieces)), offsets
