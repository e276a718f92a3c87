"""Curated word lists for recall: stop words per language, priors for common words, English
spellings and related words (spec 03.2). The lists are in ``words.txt`` beside this module,
one ``[section]`` each; its header says how each kind of list is used."""

from __future__ import annotations

from pathlib import Path
from typing import Final


def _sections(text: str) -> dict[str, list[str]]:
    """``[name]`` headers, each followed by its lines; lines starting with ``#`` are comments."""
    sections: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in map(str.strip, text.splitlines()):
        if line.startswith("[") and line.endswith("]"):
            lines = sections.setdefault(line[1:-1], [])
        elif line and not line.startswith("#"):
            lines.append(line)
    return sections


_LISTS: Final = _sections(Path(__file__).with_name("words.txt").read_text(encoding="utf-8"))


def _words(name: str) -> frozenset[str]:
    return frozenset(" ".join(_LISTS[name]).split())


_LANGUAGES: Final = ("english", "french", "german", "spanish", "italian", "portuguese", "dutch")
_STOP: Final = {name: _words(f"{name}_stop") for name in (*_LANGUAGES, "hindi")}
#: Per Snowball language, its stop words (``porter`` is English, ``dutch_porter`` Dutch).
STOP_WORDS: Final = {**_STOP, "porter": _STOP["english"], "dutch_porter": _STOP["dutch"]}
ENGLISH_STOP: Final = _STOP["english"]
#: Always active, whatever the languages (Thai particles; CJK grammar characters and pairs).
UNSPACED_STOP: Final = _words("unspaced_stop")
CJK_STOP: Final = _words("cjk_stop")
#: Priors for the share of notes a word appears in (see :mod:`oharness.recall.score`).
UNSPACED_COMMON: Final = _words("unspaced_common")
VERY_COMMON_WORDS: Final = _words("very_common_words")
SESSION_WORDS: Final = _words("session_words")
COMMON_WORDS: Final = _words("common_words")
CJK_COMMON: Final = _words("cjk_common")
CODE_WORDS: Final = _words("code_words")
#: Per-message recall: sets of related words, of words meaning the same, and the words that
#: frame a question (English).
RELATED_WORDS: Final = tuple(tuple(line.split()) for line in _LISTS["related_words"])
SAME_WORDS: Final = tuple(tuple(line.split()) for line in _LISTS["same_words"])
FRAME_WORDS: Final = _words("frame_words")
#: English irregular forms and their base word ("broke" -> "break").
IRREGULAR_ENGLISH: Final = {
    form: base for base, *forms in map(str.split, _LISTS["irregular_english"]) for form in forms
}

#: British spellings and their American form, applied before stemming with an English stemmer
#: so both spellings meet (``colour`` and ``color``, ``organise`` and ``organize``). Listed
#: words only, with their usual inflections (``words.txt``); the ``-ise``/``-yse`` verbs
#: follow :data:`BRITISH_ISE` instead.
BRITISH_SPELLING: Final = {
    stem + ending: stem[: -len(old)] + new.strip("-") + ending
    for stems, (old, new), endings in (
        [part.split() for part in line.split(":")] for line in _LISTS["british_patterns"]
    )
    for stem in stems
    for ending in (ending.strip("-") for ending in endings)
} | dict(map(str.split, _LISTS["british_words"]))
#: ``organise``, ``organised``, ``organising``, ``organisation``, ``analyse``... : the ``s`` of
#: these endings is read as ``z`` (both spellings meet; words like ``promise`` only meet
#: themselves).
BRITISH_ISE: Final = r"(?<=[a-z]{3})(is|ys)(?=(?:e|es|ed|ing|ation|ations|er|ers|able)$)"
