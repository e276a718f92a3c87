"""The page's message catalogues (spec 11): English by default, zh-CN by choice.

One JSON file per language in ``strings/`` (``en.json``, ``zh-CN.json``), a flat mapping of
dotted keys to text with ``{name}`` placeholders. The language is ``?lang=`` when it names a
catalogue, else the best ``Accept-Language`` match (any ``zh`` tag picks zh-CN), else English.
A key missing from a catalogue falls back to English (a test keeps the catalogues' keys equal).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Final

DEFAULT_LANGUAGE: Final = "en"
LANGUAGES: Final = ("en", "zh-CN")
#: How each language names itself, for the language switch.
LANGUAGE_NAMES: Final = {"en": "English", "zh-CN": "简体中文"}


@cache
def catalogue(language: str) -> Mapping[str, str]:
    """The messages of ``language`` (one of :data:`LANGUAGES`)."""
    if language not in LANGUAGES:
        raise KeyError(language)
    text = resources.files(__package__).joinpath("strings", f"{language}.json").read_text("utf-8")
    data = json.loads(text)
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f"strings/{language}.json must map keys to strings")
    return data


def _accepted(header: str) -> list[str]:
    """Language tags of an ``Accept-Language`` header, best first (q=0 dropped)."""
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                quality = float(params[2:])
            except ValueError:
                quality = 0.0
        if tag and quality > 0:
            ranked.append((-quality, position, tag.strip().lower()))
    return [tag for _, _, tag in sorted(ranked)]


def choose_language(query: str | None, accept_language: str | None) -> str:
    """The page language: an explicit ``?lang=``, else the browser's, else English."""
    if query:
        for language in LANGUAGES:
            if query.lower() == language.lower():
                return language
    for tag in _accepted(accept_language or ""):
        if tag == "en" or tag.startswith("en-"):
            return "en"
        if tag == "zh" or tag.startswith("zh-"):
            return "zh-CN"
    return DEFAULT_LANGUAGE


class Translator:
    """``t("key", name=value)``: the text of a key in one language."""

    def __init__(self, language: str) -> None:
        self.language = language
        self._messages = catalogue(language)
        self._fallback = catalogue(DEFAULT_LANGUAGE)

    def __call__(self, key: str, **values: object) -> str:
        text = self._messages.get(key) or self._fallback.get(key)
        if text is None:
            raise KeyError(f"no message {key!r} in strings/{DEFAULT_LANGUAGE}.json")
        return text.format(**values) if values else text
