"""The page's message catalogues (spec 11): English by default, zh-CN by choice.

One JSON file per language in ``strings/`` (``en.json``, ``zh-CN.json``), a flat mapping of
dotted keys to messages. A message is either text with ``{name}`` placeholders, or a plural
message: ``{"plural": "count", "one": "…", "other": "…"}`` names the placeholder whose number
picks the form and gives one text per CLDR plural category of the language (English has
``one`` and ``other``, Chinese only ``other``). Categories come from Babel's plural rules, never
from hand-written endings.

Every message goes through one function, :class:`Translator` (``t(key, **values)``), which
formats its values for the language with Babel: an ``int`` as a number (``5,000``),
``{name:moment}`` an epoch-milliseconds time as a date and time (UTC), ``{name:ago}`` the same
as a relative time ("3 hours ago", "3小时前").

The language is ``?lang=`` when it names a catalogue, else the best ``Accept-Language`` match
(any ``zh`` tag picks zh-CN), else English. A key missing from a catalogue falls back to
English (a test keeps the catalogues' keys, placeholders and plural forms right).
"""

from __future__ import annotations

import datetime as dt
import json
import string
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Final

from babel import Locale
from babel.dates import format_date, format_time, format_timedelta
from babel.numbers import format_decimal

DEFAULT_LANGUAGE: Final = "en"
LANGUAGES: Final = ("en", "zh-CN")
#: The Babel locale of each language.
LOCALES: Final = {"en": "en", "zh-CN": "zh_Hans_CN"}
#: The format specs a placeholder may carry (``{time:moment}``).
FORMAT_SPECS: Final = ("", "moment", "ago")

Message = str | Mapping[str, str]


def _check_message(language: str, key: str, message: object) -> Message:
    if isinstance(message, str):
        return message
    texts = isinstance(message, dict) and all(isinstance(v, str) for v in message.values())
    if texts and "plural" in message and "other" in message:  # type: ignore[operator]
        return message  # type: ignore[return-value]
    raise ValueError(
        f"strings/{language}.json: {key!r} must be a text or a plural message "
        '({"plural": "<placeholder>", "one": "…", "other": "…"})'
    )


@cache
def catalogue(language: str) -> Mapping[str, Message]:
    """The messages of ``language`` (one of :data:`LANGUAGES`)."""
    if language not in LANGUAGES:
        raise KeyError(language)
    text = resources.files(__package__).joinpath("strings", f"{language}.json").read_text("utf-8")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"strings/{language}.json must map keys to messages")
    return {key: _check_message(language, key, value) for key, value in data.items()}


@cache
def locale_of(language: str) -> Locale:
    """The Babel locale of a page language."""
    return Locale.parse(LOCALES[language])


def plural_categories(language: str) -> frozenset[str]:
    """The CLDR plural categories a plural message of ``language`` must give."""
    return frozenset(locale_of(language).plural_form.tags) | {"other"}


def message_texts(message: Message) -> list[str]:
    """Every text of a message (one, or one per plural category)."""
    if isinstance(message, str):
        return [message]
    return [text for category, text in message.items() if category != "plural"]


def placeholders(text: str) -> set[tuple[str, str]]:
    """The ``(name, format spec)`` pairs of a message text."""
    return {
        (name, spec or "")
        for _, name, spec, _ in string.Formatter().parse(text)
        if name is not None
    }


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


class _Formatter(string.Formatter):
    """``str.format`` with the language's numbers, times and relative times."""

    def __init__(self, translator: Translator) -> None:
        self.translator = translator

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "moment":
            return self.translator.moment(value)
        if format_spec == "ago":
            return self.translator.ago(value)
        if format_spec:
            raise ValueError(f"unknown format {format_spec!r}: use one of {FORMAT_SPECS}")
        if isinstance(value, int) and not isinstance(value, bool):
            return self.translator.number(value)
        return str(value)


class Translator:
    """``t("key", name=value)``: the text of a key in one language (see the module notes).

    ``now`` (epoch milliseconds) is what relative times count from.
    """

    def __init__(self, language: str, now: int | None = None) -> None:
        self.language = language
        self.locale = locale_of(language)
        self.now = now
        self._messages = catalogue(language)
        self._fallback = catalogue(DEFAULT_LANGUAGE)
        self._formatter = _Formatter(self)

    def __call__(self, key: str, **values: object) -> str:
        message = self._messages.get(key) or self._fallback.get(key)
        if message is None:
            raise KeyError(f"no message {key!r} in strings/{DEFAULT_LANGUAGE}.json")
        text = self._select(key, message, values)
        return self._formatter.vformat(text, (), values)

    def has(self, key: str) -> bool:
        """Whether a message ``key`` exists (in English, so in every language)."""
        return key in self._fallback

    def _select(self, key: str, message: Message, values: Mapping[str, object]) -> str:
        if isinstance(message, str):
            return message
        count = values.get(message["plural"])
        if not isinstance(count, int):
            raise TypeError(f"message {key!r} needs a number for {message['plural']!r}")
        category = self.locale.plural_form(count)
        return message.get(category) or message["other"]

    def number(self, value: int) -> str:
        """A number as the language writes it (``5,000``)."""
        return format_decimal(value, locale=self.locale)

    def moment(self, ms: object) -> str:
        """An epoch-milliseconds time as a date and time in UTC (empty for none)."""
        if not isinstance(ms, int) or isinstance(ms, bool) or not ms:
            return ""
        moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
        date = format_date(moment, "medium", locale=self.locale)
        time = format_time(moment, "short", tzinfo=dt.UTC, locale=self.locale)
        pattern = str(self.locale.datetime_formats["medium"])
        return pattern.replace("{1}", date).replace("{0}", time) + " UTC"

    def ago(self, ms: object) -> str:
        """An epoch-milliseconds time relative to ``now`` ("3 hours ago"; the time itself
        when ``now`` is unknown)."""
        if not isinstance(ms, int) or isinstance(ms, bool) or not ms:
            return ""
        if self.now is None:
            return self.moment(ms)
        delta = dt.timedelta(milliseconds=ms - self.now)
        if abs(delta) < dt.timedelta(seconds=45):
            return self("time.just_now")
        return format_timedelta(delta, add_direction=True, threshold=1, locale=self.locale)
