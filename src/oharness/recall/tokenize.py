"""Turning text into recall terms (spec 03.2, "Tokenising"; docs/recall.md, "Tokenising").

Text that is not ASCII is NFKC-normalised and cut into chunks: runs of CJK characters, runs
of an unspaced script (Thai...), and words joined by ``- _ . /``. A CJK run becomes its
overlapping pairs, an unspaced run the pairs of its letter clusters. An identifier is kept
whole and split into its parts (separators, camelCase). Words are case-folded, stop words
dropped, the rest stemmed with every configured Snowball stemmer (a word's distinct stems are
alternatives: :meth:`Tokenizer.query_terms`); with English, irregular forms and British
spellings meet their base first. Results are cached per chunk (PyStemmer's own cache is off:
it slows mostly-new words down).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import Final, Protocol

import Stemmer  # PyStemmer ships no type hints (see the mypy override in pyproject)

from oharness.errors import ConfigError
from oharness.recall.words import (
    BRITISH_ISE,
    BRITISH_SPELLING,
    CJK_COMMON,
    CJK_STOP,
    CODE_WORDS,
    COMMON_WORDS,
    ENGLISH_STOP,
    IRREGULAR_ENGLISH,
    SESSION_WORDS,
    STOP_WORDS,
    UNSPACED_COMMON,
    UNSPACED_STOP,
    VERY_COMMON_WORDS,
)

#: Bump when a change here or to the stop lists of :mod:`~oharness.recall.words` changes the
#: terms of any text, or the index keeps other marks: it invalidates derived caches.
TOKENIZER_VERSION: Final = 9

#: First character of phrase terms (:meth:`Tokenizer.phrases`) and link terms.
PHRASE_MARK: Final = "\x01"
LINK_MARK: Final = "\x02"

#: Prior share of notes that contain a term (see :mod:`oharness.recall.score`).
PRIOR_VERY_COMMON: Final = 0.25
PRIOR_COMMON: Final = 0.08
PRIOR_SHORT_NUMBER: Final = PRIOR_COMMON  # one or two digits: list items, counts, line numbers
PRIOR_NUMBER: Final = 0.02  # three or four digits: years, ports, status codes


def _lazy(pattern: str) -> Callable[[], re.Pattern[str]]:
    """A getter for ``re.compile(pattern)`` that compiles once, when first called."""
    return functools.cache(lambda: re.compile(pattern))


_CJK: Final = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK and Kangxi radicals
    "\u3005-\u3007\u3021-\u3029\u3038-\u303b"  # 々〆〇, Hangzhou numerals
    "\u3041-\u309f"  # Hiragana
    "\u30a1-\u30fa\u30fc-\u30ff"  # Katakana without the middle dot
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf\u4e00-\u9fff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # Han compatibility
    "\uff66-\uff9f"  # half-width Katakana (NFKC usually removes these)
    "\U00020000-\U0003134f"  # Han extensions B-H
)
#: Scripts written without spaces between words, outside CJK: Thai, Lao, Myanmar, Khmer.
_UNSPACED: Final = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
_ASCII_WORD_CHAR: Final = r"[A-Za-z0-9]"  # [^\W_] on ASCII text, matched faster
_ASCII_CHUNK: Final = re.compile(rf"{_ASCII_WORD_CHAR}+(?:[-_./]+{_ASCII_WORD_CHAR}+)*")


@functools.cache
def combining_marks() -> frozenset[str]:
    """The combining marks (categories Mn, Mc, Me) of the Basic Multilingual Plane, asked of
    :mod:`unicodedata` when text that is not ASCII is first read (some 15 ms)."""
    chars = map(chr, range(0x0300, 0x10000))
    return frozenset(char for char in chars if unicodedata.category(char)[0] == "M")


def char_class(chars: Iterable[str]) -> str:
    """A character-class body of ``chars`` (none of them special in a class) as ranges."""
    ranges: list[list[int]] = []
    for code in sorted(map(ord, chars)):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


@functools.cache
def _chunk() -> re.Pattern[str]:
    """The chunk pattern of text that is not ASCII: ``\\w`` leaves combining marks out, which
    would cut Devanagari, Bengali or Tamil words after every consonant, so they are added
    (but those of the unspaced scripts, which are paired instead)."""
    unspaced = re.compile(rf"[{_UNSPACED}]")
    marks = char_class(mark for mark in combining_marks() if not unspaced.match(mark))
    word = rf"(?:[^\W_{_CJK}{_UNSPACED}]|[{marks}])"
    return re.compile(rf"[{_CJK}]+|[{_UNSPACED}]+|{word}+(?:[-_./]+{word}+)*")


# The patterns for text that is not ASCII are compiled when first needed (a few ms each, which
# a process that only ever sees English never pays).
_CJK_RUN: Final = _lazy(rf"[{_CJK}]+")
_UNSPACED_RUN: Final = _lazy(rf"[{_UNSPACED}]+")
_SEPARATORS: Final = re.compile(r"[-_./]+")
_CAMEL_BOUNDARY: Final = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")
_CAMEL_PART: Final = re.compile(r"[A-Z]+(?![^\W\dA-Z_])|[A-Z]?[^\W\dA-Z_]+|\d+")
_PLURAL_ACRONYM: Final = re.compile(r"[A-Z]{2,}s")  # PDFs, PRs, APIs: one word, the acronym
_HIRAGANA_PAIR: Final = re.compile(r"[\u3041-\u309f]{2}")
_MAX_CACHED_CHUNKS: Final = 400_000
_BRITISH_ISE: Final = re.compile(BRITISH_ISE)

#: The terms of one chunk: one tuple of alternatives per word or part.
Groups = tuple[tuple[str, ...], ...]


class _Stemmer(Protocol):
    def stemWord(self, word: str) -> str: ...


def available_languages() -> tuple[str, ...]:
    """The Snowball stemmer names accepted in ``memory.recall.languages``."""
    return tuple(sorted(Stemmer.algorithms()))


class Tokenizer:
    """Splits text into recall terms for a fixed list of Snowball languages.

    Not thread-safe (it fills a cache); give each thread its own or serialise calls.
    """

    def __init__(self, languages: Sequence[str] = ("english",)) -> None:
        names = tuple(dict.fromkeys(language.strip().lower() for language in languages))
        known = available_languages()
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ConfigError(
                f"memory.recall.languages: unknown stemmer language(s) {', '.join(unknown)}; "
                f"available: {', '.join(known)}",
                key="memory.recall.languages",
                unknown=unknown,
                available=list(known),
            )
        self.languages: tuple[str, ...] = names
        # maxCacheSize=0: our per-chunk cache makes PyStemmer's own a pure slowdown.
        self._stemmers: list[_Stemmer] = [Stemmer.Stemmer(name, 0) for name in names]
        stop = set(ENGLISH_STOP)
        for name in names:
            stop |= STOP_WORDS.get(name, frozenset())
        self._stop: frozenset[str] = frozenset(stop)
        #: Whether English is one of the languages (English-only rules apply).
        self.english = bool({"english", "porter"} & set(names))
        self._irregular = {**BRITISH_SPELLING, **IRREGULAR_ENGLISH} if self.english else {}
        self._cache: dict[str, Groups] = {}
        self._priors = self._build_priors()
        # A phrase pairs no word whose prior is that of the most common words; no prior
        # computed later is that high (a number's or a hiragana pair's is lower).
        self._very_common = frozenset(
            term for term, prior in self._priors.items() if prior >= PRIOR_VERY_COMMON
        )

    @property
    def signature(self) -> str:
        """Identifies the term output: equal signatures give equal terms for equal text."""
        return f"v{TOKENIZER_VERSION}:{','.join(self.languages)}"

    def tokens(self, text: str) -> list[str]:
        """All terms of ``text`` in order, repeats kept (each alternative stem listed)."""
        return [term for chunk in _chunks(text) for group in self._analyse(chunk) for term in group]

    def counts(self, text: str) -> dict[str, int]:
        """How often each term occurs in ``text`` (the form documents are indexed in), in the
        order of first appearance (the order a new note's terms get their ids in)."""
        return Counter(self.tokens(text))

    def query_terms(self, text: str) -> list[tuple[str, ...]]:
        """Distinct words of ``text``, each as its alternative terms; no term appears twice."""
        return self.message_terms(text)[0]

    def phrases(self, text: str) -> list[str]:
        """Phrase terms of ``text``: each pair of neighbouring words, in either order.

        Stop words are skipped (``cards on the pricing page`` pairs ``card`` with ``price``);
        the most common words and repeats pair with nothing. A phrase term starts with
        :data:`PHRASE_MARK`, so it never collides with a word.
        """
        return self.message_terms(text)[1]

    def message_terms(self, text: str) -> tuple[list[tuple[str, ...]], list[str]]:
        """:meth:`query_terms` and :meth:`phrases` of ``text`` at once."""
        flat = [group for chunk in _chunks(text) for group in self._analyse(chunk)]
        return _distinct_groups(flat), self._pairs(flat)

    def joined(self, text: str) -> dict[str, tuple[str, str]]:
        """Each two neighbouring words written as one, as a term ("exit code" gives
        ``exitcod``, the term of "exit-codes" and "exitcodes"), and the two words: a message
        can meet the compound a note writes joined or hyphenated. Words of ASCII letters;
        not two stop words."""
        words = [chunk.casefold() for chunk in _chunks(text)]
        stop = self._stop
        found: dict[str, tuple[str, str]] = {}
        for first, second in pairwise(words):
            both = first + second  # two words of ASCII letters, not two stop words
            if both.isalpha() and both.isascii() and (first not in stop or second not in stop):
                for term in self._stems(both):
                    found.setdefault(term, (first, second))
        return found

    def phrase(self, first: str, second: str) -> str:
        """The phrase term of two words (either order; see :meth:`phrases`)."""
        one, other = sorted((self._stems(first)[0], self._stems(second)[0]))
        return f"{PHRASE_MARK}{one} {other}"

    def _pairs(self, groups: list[tuple[str, ...]]) -> list[str]:
        """The phrase terms of a text's word groups in order (see :meth:`phrases`)."""
        previous: str | None = None
        found: dict[str, None] = {}
        very_common = self._very_common
        for group in groups:
            term = group[0]
            if term in very_common:
                previous = None
                continue
            if previous is not None and previous != term:
                first, second = (previous, term) if previous < term else (term, previous)
                found[f"{PHRASE_MARK}{first} {second}"] = None
            previous = term
        return list(found)

    def prior(self, term: str) -> float:
        """The share of notes a term is assumed to occur in before any note is seen."""
        found = self._priors.get(term)
        if found is not None:
            return found
        return 0.0 if term.isascii() and not term.isdigit() else _pattern_prior(term)

    def _build_priors(self) -> dict[str, float]:
        # Function words of languages not configured still occur (a French sentence in an
        # English setup): they score like the most common words instead of being dropped,
        # because some are real words elsewhere ("die", "son", "pour").
        foreign = frozenset().union(*STOP_WORDS.values()) - self._stop
        priors: dict[str, float] = {}
        for words, share in (
            (COMMON_WORDS, PRIOR_COMMON),
            (CODE_WORDS, PRIOR_COMMON),
            (CJK_COMMON, PRIOR_COMMON),
            (VERY_COMMON_WORDS, PRIOR_VERY_COMMON),
            (SESSION_WORDS, PRIOR_VERY_COMMON),
            (foreign, PRIOR_VERY_COMMON),
            (UNSPACED_COMMON, PRIOR_VERY_COMMON),
        ):
            for term in (term for word in words for term in self.tokens(word)):
                priors[term] = max(share, priors.get(term, 0.0))
        return priors

    def _analyse(self, chunk: str) -> Groups:
        cached = self._cache.get(chunk)
        if cached is not None:
            return cached
        if chunk.isascii():  # neither CJK nor an unspaced script
            groups = self._word_groups(chunk)
        elif _CJK_RUN().fullmatch(chunk):
            groups = _pair_groups(chunk, CJK_STOP)
        elif _UNSPACED_RUN().fullmatch(chunk):
            groups = _pair_groups(_clusters(chunk), UNSPACED_STOP)
        else:
            groups = self._word_groups(chunk)
        if len(self._cache) >= _MAX_CACHED_CHUNKS:
            self._cache.clear()  # bounded memory in long-lived processes; refills quickly
        self._cache[chunk] = groups
        return groups

    def _word_groups(self, chunk: str) -> Groups:
        parts: list[str] = []
        for piece in _SEPARATORS.split(chunk):
            if _CAMEL_BOUNDARY.search(piece) and not _PLURAL_ACRONYM.fullmatch(piece):
                parts.extend(_CAMEL_PART.findall(piece))
            elif piece:  # "PRs", "SDKs": the acronym, as no stemmer strips their "s"
                plural = piece[-1] == "s" and _PLURAL_ACRONYM.fullmatch(piece)
                parts.append(piece[:-1] if plural else piece)
        groups: list[tuple[str, ...]] = []
        if len(parts) > 1:
            # A compound of words ("on-call", "feature_flags", "deepLink") is also one word,
            # stemmed as its parts written together are ("oncall", "featureflag", "deeplink"),
            # so every way of writing it meets the others; a path, a file name or a version
            # ("src/app.py", "v1.2") is kept whole as written.
            whole = chunk.casefold()
            joined = "".join(parts).casefold()
            if joined.isalpha() and "." not in chunk and "/" not in chunk:
                if joined not in self._stop:
                    groups.append(self._stems(joined))
            elif whole not in self._stop:
                groups.append((whole,))
        seen: set[str] = {term for group in groups for term in group}
        for part in parts:
            word = part.casefold()
            # A lone letter cut out of an identifier ("e.g", "v-model") names nothing, nor do
            # the zeros of a time or an amount ("10:00", "1,000" meet "10" and "1").
            if word in self._stop or (len(parts) > 1 and len(word) == 1 and word.isalpha()):
                continue
            if len(word) > 1 and not word.strip("0"):
                continue
            fresh = tuple(stem for stem in self._stems(word) if stem not in seen)
            if fresh:
                seen.update(fresh)
                groups.append(fresh)
        return tuple(groups)

    def _stems(self, word: str) -> tuple[str, ...]:
        """A word's distinct stems, one per language (English: an irregular form read as its
        base, a British spelling as the American one)."""
        word = self._irregular.get(word, word)
        if self.english and ("is" in word or "ys" in word):
            word = _BRITISH_ISE.sub(_as_z, word)
        if len(self._stemmers) == 1:  # the usual configuration
            return (self._stemmers[0].stemWord(word),)
        return tuple(dict.fromkeys(stemmer.stemWord(word) for stemmer in self._stemmers)) or (word,)


def unspaced_term(term: str) -> bool:
    """True for a term of a script written without spaces (a CJK or Thai pair or lone unit)."""
    if term.isascii():  # every such script lies above U+0E00
        return False
    return bool(_CJK_RUN().fullmatch(term) or _UNSPACED_RUN().fullmatch(term))


def _as_z(match: re.Match[str]) -> str:
    return match.group(1)[0] + "z"


def _distinct_groups(groups: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """``groups`` in order, each term kept at its first appearance (a group left with no
    term dropped)."""
    seen: set[str] = set()
    distinct: list[tuple[str, ...]] = []
    for group in groups:
        fresh = tuple(term for term in group if term not in seen)
        if fresh:
            seen.update(fresh)
            distinct.append(fresh)
    return distinct


def _chunks(text: str) -> list[str]:
    if text.isascii():
        return _ASCII_CHUNK.findall(text)
    return _chunk().findall(unicodedata.normalize("NFKC", text))


def _clusters(text: str) -> list[str]:
    """Each letter with the combining marks that follow it: the unit unspaced runs are paired
    in (a mark with no letter before it is dropped). Without a regular expression, whose
    class of every mark takes longer to compile than a process spends on Thai words."""
    marks = combining_marks()
    clusters: list[str] = []
    for char in text:
        if char not in marks:
            clusters.append(char)
        elif clusters:
            clusters[-1] += char
    return clusters


def _pattern_prior(term: str) -> float:
    """The prior of a term not in the word lists: numbers and hiragana pairs, else 0."""
    if term.isdigit():
        if len(term) <= 2:
            return PRIOR_SHORT_NUMBER
        return PRIOR_NUMBER if len(term) <= 4 else 0.0
    if _HIRAGANA_PAIR.fullmatch(term):
        return PRIOR_COMMON  # hiragana-only pairs are mostly inflections and particles
    return 0.0


def _pair_groups(units: Sequence[str], stop: frozenset[str]) -> Groups:
    """Overlapping pairs of characters (CJK) or letter clusters (Thai...); one alone stays."""
    if len(units) == 1:
        return () if units[0] in stop else ((units[0],),)
    pairs = dict.fromkeys(units[i] + units[i + 1] for i in range(len(units) - 1))
    return tuple((pair,) for pair in pairs if pair not in stop)
