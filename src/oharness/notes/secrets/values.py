"""Value heuristics of the credential check: placeholders, code, names, random-looking values."""

from __future__ import annotations

import functools
import itertools
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
# A template, variable or expression rather than a literal: ${X}, $X, $HOME/x, $(cmd), {{ x }},
# %(x)s, %s, <your-token>, {name}, os.environ[...], get_token(), bcrypt.hash(pw), a "$2b$..."
# crypt hash, "user:$FROM_EMAIL", a YAML anchor or tag (&x, *x, !x) or a decorator (@x) that is
# the whole value. A generated password may well start with "$", "%", "&", "*", "!" or "@", so
# a sigil counts only when a name follows it to the end (or, for "$", to a "/", ":" or "@"). The
# second expression searches the whole value.
_CODE_REFERENCE_RE: Final = _lazy(
    r"\$[{(]|\$[A-Z_][A-Z0-9_]*(?:[/:@}\]]|$)|\$[a-z_][a-z0-9_]*$|\$(?:1|2[abxy]?|5|6|y|argon2i?d?)\$|%\(|%[sdr]"
    r"(?![A-Za-z0-9])|[({<\[]|[A-Za-z_][\w.:]*\s*[(\[]"
)
# A YAML anchor, alias or tag, or a decorator, when a name follows: &defaults, *db, !vault, @x.
_SIGIL_NAME_RE: Final = _lazy(r"[&*!@]([A-Za-z_][\w.\-]*)")
# An environment variable inside a value stands between separators (user:$FROM_EMAIL,
# https://$HOST/x); "$PVH^" inside a generated password does not.
_CODE_INSIDE_RE: Final = _lazy(
    r"\{\{|\}\}|\$\{|\$\(|(?:^|[:/@=.\-])\$[A-Z_][A-Z0-9_]{2,}(?:$|[:/@.\-])"
    r"|[A-Za-z_]\w*\([^()]*\)"
)
# An identifier is split into segments at these; each segment must read as words (see below).
_IDENTIFIER_SEPARATOR_RE: Final = _lazy(r"[_.\-:/@+=]+")
_CASE_RUN_RE: Final = _lazy(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_VOWEL_RE: Final = _lazy(r"[aeiouy]")
_DIGIT_RE: Final = _lazy(r"[0-9]")
_NON_LETTER_RE: Final = _lazy(r"[^A-Za-z]+")
# Numbers, dates, times, versions and addresses: 4096, 2024-01-15T10:00:00Z, v1.2.3-beta.
# Each later piece is digits with at most two letters (15T10, 00Z) or a short word (beta, rc1).
_NUMERIC_RE: Final = _lazy(
    r"[vV]?[0-9]+(?:[.\-+_:/,](?:[0-9]+[A-Za-z]{0,2}[0-9]*|[A-Za-z]{1,8}[0-9]*))*"
)
_PATH_OR_URL_RE: Final = _lazy(r"[A-Za-z][A-Za-z0-9+.\-]*://|~?\.{0,2}/|[A-Za-z]:\\")


def _shannon_entropy(value: str) -> float:
    n = len(value)
    return math.log2(n) - sum(count * math.log2(count) for count in Counter(value).values()) / n


def _is_placeholder(value: str) -> bool:
    lowered = value.lower()
    for word in _PLACEHOLDER_WORDS:
        start = lowered.find(word)
        while start != -1:
            if _written_as_a_word(value, start, start + len(word)):
                return True
            start = lowered.find(word, start + 1)
    return _REPEATED_CHARACTER_RE().search(value) is not None


def _written_as_a_word(value: str, start: int, end: int) -> bool:
    """Whether ``value[start:end]`` is written as a word would be, in one case or capitalised
    (``your_key``, ``YOURKEYHERE``, ``myTestToken``), not in the mixed case of letters that
    happen to spell it inside a random token (``…v4gtesTvA…``)."""
    piece = value[start:end]
    return piece.islower() or piece.isupper() or piece.istitle() or not piece.isalpha()


def _is_code_reference(value: str) -> bool:
    if _CODE_REFERENCE_RE().match(value):
        return True
    sigil = _SIGIL_NAME_RE().fullmatch(value)
    if sigil is not None and _reads_as_name(sigil.group(1)):
        return True
    return _CODE_INSIDE_RE().search(value) is not None


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


_NAME_RE: Final = _lazy(r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-:/][A-Za-z_][A-Za-z0-9_]*)*")
_NAME_SEPARATOR_RE: Final = _lazy(r"[_.\-:/]+")


def _segment_reads_as_words(segment: str) -> bool:
    """One piece of a name (between separators), judged strictly: do its case runs read as words?

    Words and abbreviations have runs of two letters or more with a vowel (``User``, ``By``,
    ``Id``), few for the length; an abbreviation without a vowel is a whole piece (``ssh``,
    ``db``) or a short capital run (``HTTP``); a mixed-case piece holds one such capital run
    at most; numbers come at the end or are short (``utf8``, ``x509``). A generated string
    breaks into many short runs, vowel-less clusters and capital runs (``Zso``, ``Ww``,
    ``IUiTeNUJ``, ``HHXucuvi5SMPEAny``), or is hex (``a616aefec72020``).
    """
    if len(segment) >= 8 and _HEX_RE().fullmatch(segment) and not segment.isalpha():
        return False
    runs = _CASE_RUN_RE().findall(segment)
    last = len(runs) - 1
    if len(runs) > max(2.0, len(segment) / (3 if len(segment) < 12 else 3.5)):
        return False
    mixed_case = not (segment.isupper() or segment.islower())
    capital_runs = 0
    for index, run in enumerate(runs):
        if run.isdigit():
            if len(run) >= 4 and index != last:
                return False
            # Digits between letters of an all-capital piece (base32: JBSWY3DPEHPK), or digits
            # before a capital run (6WFFY), do not make a name.
            if segment.isupper() and 0 < index < last:
                return False
            if index < last and len(runs[index + 1]) > 1 and runs[index + 1].isupper():
                return False
            continue
        if len(run) == 1:
            # A capital left alone at the end of a long piece (FWybmuffirpM) is no word.
            trailing = index == last and run.isupper() and len(segment) >= 8
            if not trailing and (index in (0, last) or runs[index + 1].isdigit() or run in "AI"):
                continue
            return False
        if run.isupper() and mixed_case:
            capital_runs += 1
            if capital_runs > 1 or len(run) > 5:
                return False
        lowered = run.lower()
        if not _VOWEL_RE().search(lowered) or (len(run) == 2 and lowered[0] == "y"):
            if len(run) > 4 or not (run.isupper() or run == segment):
                return False
        elif _CONSONANT_CLUSTER_RE().search(run.lower()):
            return False
        if len(run) >= 2 and _RARE_PAIR_RE().search(run.lower()):
            return False
    return True


_HEX_RE: Final = _lazy(r"[0-9a-f]+|[0-9A-F]+")
# Letter pairs that English words (and the abbreviations of code: sqlite, jsx, heapq, 10px)
# do not hold; a random run of letters soon does.
_RARE_PAIR_RE: Final = _lazy(
    r"bx|cj|cx|fq|fx|gq|gx|hx|jf|jg|jv|jw|jx|jz|kq|kx|q[b-hj-km-np-tv-z]|vb|vf|vh|vj|vq"
    r"|vw|vx|wq|xj|xk|xq|xz|zj|zq|zx"
)
# Six consonants in a row, or seven counting "y", read as no word ("healthcheck", "httpcore",
# "downstream" and "strptime" have five; "asynchronous" and "encryption" six with "y").
_CONSONANT_CLUSTER_RE: Final = _lazy(r"[bcdfghjklmnpqrstvwxz]{6}|[bcdfghjklmnpqrstvwxyz]{7}")


def _reads_as_name(value: str) -> bool:
    """A code name or word (``config.api_key``, ``AUTH_TOKEN_V2``, ``getAccessToken``)."""
    if not _NAME_RE().fullmatch(value):
        return False
    segments = [segment for segment in _NAME_SEPARATOR_RE().split(value) if segment]
    digit_runs = sum(len(_DIGIT_RUN_RE().findall(segment)) for segment in segments)
    return digit_runs <= 2 and all(_segment_reads_as_words(segment) for segment in segments)


_DIGIT_RUN_RE: Final = _lazy(r"[0-9]+")


def _looks_like_password(value: str, min_length: int, *, digits: bool = False) -> bool:
    """Whether a value given to a credential key (``password=``, ``api_key:``) is a literal secret.

    The key already says "credential", so the value needs less evidence than a bare string:
    at least ``min_length`` printable ASCII characters without spaces or backslashes; not a
    placeholder, template or code reference; not a number, date, version, path or URL; not a
    word with punctuation (``Hello!!``); not a name under the strict reading of
    :func:`_reads_as_name`; and an entropy of at least 2 bits per character (``aabbccdd``
    has exactly 2). :func:`_looks_random` is the looser test for
    values with no such key (a Bearer token, a key after ``sk-``). With ``digits`` (the key
    names a password or passcode), ten digits or more are a numeric password unless they count
    up or down (``1234567890``).
    """
    n = len(value)
    if n < min_length or not value.isascii() or " " in value or not value.isprintable():
        return False
    if "\\" in value or _is_placeholder(value) or _is_code_reference(value):
        return False
    if value.isdigit() and digits and n >= 10:
        steps = {(int(b) - int(a)) % 10 for a, b in itertools.pairwise(value)}
        return not steps <= {1} and not steps <= {9}
    if _is_number_of_words(value) or _is_path_of_names(value):
        return False
    if _reads_as_name(value) or _is_punctuated_words(value):
        return False
    return _shannon_entropy(value) >= 2.0


def _is_path_of_names(value: str) -> bool:
    """A URL, or a path whose pieces read as names (``/run/secrets/db``, ``~/.pgpass``)."""
    if not _PATH_OR_URL_RE().match(value):
        return False
    if "://" in value or ":\\" in value[:3]:
        return True
    pieces = [piece for piece in value.lstrip("~").split("/") if piece not in ("", ".", "..")]
    return all(_reads_as_name(piece.lstrip(".")) for piece in pieces)


def _is_number_of_words(value: str) -> bool:
    """A number, date or version (``4096``, ``2024-01-15T10:00:00Z``, ``v1.2.3-beta``) whose
    letters read as words: ``7+TOTf/FMJGj`` has the shape of a version but not its words."""
    if not _NUMERIC_RE().fullmatch(value):
        return False
    return all(_segment_reads_as_words(piece) for piece in _NON_LETTER_RE().split(value) if piece)


# Between two words, punctuation that joins them: well-known, e.g., N/A, R&D, don't, a+b, x@y.
# Generated passwords put any symbol between letters (ysze^HQ_?zca, Ca?MvkpaqPuf).
_INNER_PUNCTUATION_RE: Final = _lazy(r"[A-Za-z]([^A-Za-z]+)(?=[A-Za-z])")
_JOINERS: Final = frozenset("-_./+:'&@,")


def _reads_as_camel_case(piece: str) -> bool:
    """Letters in camelCase words: ``Phone``, ``is``, one acronym (``OS``) and perhaps a lone
    lower-case letter first (``iPhone``); ``emhnuiDy`` and ``IEJTveZbcik`` are no such words."""
    runs = _CASE_RUN_RE().findall(piece)
    acronyms = 0
    for index, run in enumerate(runs):
        if run.isupper():
            acronyms += 1
            if acronyms > 1 or not 2 <= len(run) <= 5:
                return False
        elif len(run) - run[0].isupper() < 2 and not (index == 0 and run.islower()):
            return False
    return True


def _is_punctuated_words(value: str) -> bool:
    """Words with punctuation (``Hello!!``, ``*(optional)*``, ``iPhone-only``), judged strictly.

    Each piece of letters reads as words, is one case (``hello``, ``HELLO``, ``Hello``) or reads
    as camelCase with one acronym at most; punctuation between two pieces only joins them.
    """
    if value.isalnum() or not _is_word_with_punctuation(value):
        return False
    for inner in _INNER_PUNCTUATION_RE().findall(value):
        if not _JOINERS.issuperset(inner):
            return False
    for piece in _NON_LETTER_RE().split(value):
        if piece.islower() or piece.isupper() or piece.istitle():
            continue
        if not _reads_as_camel_case(piece):
            return False
    return all(_segment_reads_as_words(piece) for piece in _NON_LETTER_RE().split(value) if piece)
