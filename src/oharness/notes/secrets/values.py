"""Value heuristics of the credential check: placeholders, code, names, random-looking values."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Final


# Compiling the whole table at import would add ~8 ms to every start of the CLI, which imports
# this module whether or not it checks a note; each expression is compiled on first use.
def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A getter for ``re.compile(pattern, flags)`` that compiles once, when first called."""
    return functools.cache(lambda: re.compile(pattern, flags))


# Looked for in the lower-cased value.
_PLACEHOLDER_WORDS: Final = (
    "example",
    "sample",
    "placeholder",
    "your",
    "redacted",
    "changeme",
    "change_me",
    "change-me",
    "dummy",
    "fake",
    "test",
    "xxxx",
    "****",
    "...",
    "…",
)
_REPEATED_CHARACTER_RE: Final = _lazy(r"(.)\1{4}")
# A template, variable or expression rather than a literal: ${X}, $X, $(cmd), {{ x }}, %(x)s,
# <your-token>, {name}, os.environ[...], get_token(), bcrypt.hash(pw), a "$2b$..." crypt hash,
# "user:$FROM_EMAIL", a YAML anchor or tag (&x, *x, !x), a decorator (@x). The second
# expression searches the whole value; it only runs when one of "{}$(" occurs, a far cheaper test.
_CODE_REFERENCE_RE: Final = _lazy(
    r"\$[A-Za-z_{(]|\$[0-9a-z]+\$|%[({\w]|[({<\[]|[&*!@][A-Za-z_]|[A-Za-z_][\w.:]*\s*[(\[]"
)
_CODE_INSIDE_RE: Final = _lazy(
    r"\{\{|\}\}|\$\{|\$\(|\$[A-Z_][A-Z0-9_]{2,}(?![A-Za-z0-9])|[A-Za-z_]\w*\([^()]*\)"
)
# An identifier is split into segments at these; each segment must read as words (see below).
_IDENTIFIER_SEPARATOR_RE: Final = _lazy(r"[_.\-:/@+=]+")
_CASE_RUN_RE: Final = _lazy(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_VOWEL_RE: Final = _lazy(r"[aeiouy]")
_DIGIT_RE: Final = _lazy(r"[0-9]")
_NON_LETTER_RE: Final = _lazy(r"[^A-Za-z]+")
# Numbers, dates, times, versions and addresses: 4096, 2024-01-15T10:00:00Z, v1.2.3-beta.
_NUMERIC_RE: Final = _lazy(r"[vV]?[0-9]+(?:[.\-+_:/,][0-9A-Za-z]+)*")
_PATH_OR_URL_RE: Final = _lazy(r"[A-Za-z][A-Za-z0-9+.\-]*://|~?\.{0,2}/|[A-Za-z]:\\")


def _shannon_entropy(value: str) -> float:
    n = len(value)
    return math.log2(n) - sum(count * math.log2(count) for count in Counter(value).values()) / n


def _is_placeholder(value: str) -> bool:
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return True
    return _REPEATED_CHARACTER_RE().search(value) is not None


def _is_code_reference(value: str) -> bool:
    if _CODE_REFERENCE_RE().match(value):
        return True
    if "{" in value or "}" in value or "$" in value or "(" in value:
        return _CODE_INSIDE_RE().search(value) is not None
    return False


def _is_identifier_like(value: str) -> bool:
    """Words, snake_case, camelCase, CONSTANT_CASE, dotted names and paths of such words.

    Each segment between separators is split into case/digit runs. A name reads as words
    (``Socks4Response``: Socks, 4, Response; ``v1beta1``), while a generated string breaks into
    one-letter runs and digits glued to consonant clusters (``Xk9mQ2vL``: Xk, 9, m, Q, ...).
    A segment is *not* a name when it has:

    - a one-letter run, other than its first or last, that is not followed by digits;
    - digits between two upper-case runs (base32: ``JBSWY3DPEHPK``);
    - digits followed by a lower-case run that is not a word (a word has three letters or more
      with a vowel; a last run of one or two letters is allowed, as in ``k8s``);
    - more than two digit runs.
    """
    for segment in _IDENTIFIER_SEPARATOR_RE().split(value):
        if not segment:
            continue
        if not segment.isalnum():
            return False
        runs = _CASE_RUN_RE().findall(segment)
        last = len(runs) - 1
        digit_runs = 0
        for i, run in enumerate(runs):
            if not run.isdigit():
                # A lone letter before digits numbers something: V2, P256, X509.
                if len(run) == 1 and 0 < i < last and not runs[i + 1].isdigit():
                    return False
                continue
            digit_runs += 1
            if i == last:
                continue
            following = runs[i + 1]
            if i > 0 and runs[i - 1].isupper() and following.isupper():
                return False
            if following[0].islower() and not (
                (i + 1 == last and len(following) <= 2)
                or (len(following) >= 3 and _VOWEL_RE().search(following))
            ):
                return False
        if digit_runs > 2:
            return False
    return True


def _is_word_with_punctuation(value: str) -> bool:
    if _DIGIT_RE().search(value):
        return False
    letters = _NON_LETTER_RE().sub("", value)
    if letters.islower() or letters.isupper() or (letters[:1].isupper() and letters[1:].islower()):
        return True
    # camelCase reads as words even with a one-letter word (is, A, Value); generated strings
    # break into runs of one or two letters (Xk#mQ$vLp: Xk, m, Q, v, Lp).
    runs = _CASE_RUN_RE().findall(value)
    return len(letters) >= 2.5 * len(runs)


def _looks_random(value: str, min_length: int) -> bool:
    """Whether ``value`` looks like a generated token or a password rather than a word or code.

    The rule: at least ``min_length`` ASCII characters, no whitespace, no backslash (escape
    sequences are code); not a placeholder, template or code reference; not a number, date,
    version, path or URL; not an identifier (:func:`_is_identifier_like`); without digits,
    its letters must mix cases beyond a capital initial, in case runs shorter than 2.5 letters
    on average (``*(optional)*``, ``Hello!!`` and ``isAValue`` are words, ``Xk#mQ$vLp!`` is
    not); and a Shannon entropy of at least
    ``min(3.0, 0.8 * log2(length))`` bits per character: 3.0 from 14 characters on, 2.4 for
    8 characters (nearly all distinct).
    """
    n = len(value)
    if n < min_length or not value.isascii() or " " in value or not value.isprintable():
        return False
    if "\\" in value or _is_word_with_punctuation(value):
        return False
    if _is_placeholder(value) or _is_code_reference(value):
        return False
    if _NUMERIC_RE().fullmatch(value) or _PATH_OR_URL_RE().match(value):
        return False
    if _is_identifier_like(value):
        return False
    return _shannon_entropy(value) >= min(3.0, 0.8 * math.log2(n))


def _plausible_token_body(body: str) -> bool:
    """A provider token after its prefix: not a placeholder and not all one kind of character."""
    if _is_placeholder(body):
        return False
    return not (body.isalpha() and (body.islower() or body.isupper())) and not body.isdigit()
