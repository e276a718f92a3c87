"""Secret detection (spec 02.2): credentials are refused by ``remember`` and redacted elsewhere.

A curated table of rules, most of them a regular expression for one provider's token format
plus a validator that throws out placeholders (``ghp_xxxx…``, ``<your-token>``, ``${TOKEN}``).
Each rule names literal hints, at least one of which must occur in the text before it runs, and
starts matching only where a hint occurs, so an ordinary note costs a few dozen substring
searches and hardly any regex work (see ``bench/secrets_bench.py``).

Generic assignments (``password=…``, ``"api_key": "…"``, ``SECRET_TOKEN=…``, ``<password>…``,
``the password is …``) count only when the value looks generated or password-like; see
:func:`_looks_random` for the rule. An unquoted value ends at whitespace, a quote, ``,``, ``;``,
``&`` (a query string), ``<`` or ``>``. A passphrase of words, a name (``config.api_key``,
``AUTH_TOKEN_V2``), a word with punctuation and a short value (under 8 characters) are not
high-entropy and pass; so do most random values made of letters only, which read like names.
On random values the rule catches about 75% at 12 characters, 85% at 16 and 96% or more from
24 on (base62, hex, base64, base32 alike); the provider formats above are caught whatever
their randomness.

Deliberately *not* detected: a bare 40-character base64 string (an AWS secret key is recognised
only after its key name or its access key id, because the bare shape is ordinary base64); git
SHAs, UUIDs and hex digests on their own; ``data:`` URIs with base64 images (content, not
credentials; the token formats need characters or word boundaries that base64 data lacks); a
private-key header with no key material after it (prose about keys); the placeholder keys of
the AWS documentation (``…EXAMPLE…``); URLs with a password on documentation hosts
(``example.com``, ``*.test``, RFC 2606) or with a password under 3 characters.

Obfuscation: before matching, invisible characters (Unicode format characters and the default
ignorable code points: zero-width, bidi controls, soft hyphen, variation selectors, tag
characters, Hangul fillers) are deleted and the text is NFKC-normalised, so fullwidth letters
match too. Pure-ASCII text, the common case, skips both steps. Newlines survive both, so line
numbers refer to the text as the caller gave it.

Findings: :func:`find_secrets` takes named fields (``summary``, ``tags``, ``body``); pass tags
joined with newlines so that the line number is the tag's position. A kind seen twice on the
same line of a field is reported once. Nothing returned or raised contains the secret.

Redaction: :func:`redact_secrets` replaces the secret part only (the value of
``password=…``, the password of a URL, the token after ``Bearer``; a whole token or key block
otherwise) and returns text without secrets unchanged. When a secret was only visible after
normalisation, its span is mapped back onto the original text, so the rest keeps its
invisible and fullwidth characters; in the rare case where character-by-character
normalisation disagrees with whole-string normalisation (combining sequences), the redacted
*normalised* text is returned instead.
"""

from __future__ import annotations

import binascii
import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from oharness.errors import SecretError

__all__ = [
    "MODEL_MARKER",
    "SecretFinding",
    "check_no_secrets",
    "find_secrets",
    "redact_for_model",
    "redact_for_model_in",
    "redact_secrets",
]


# Compiling the whole table at import would add ~8 ms to every start of the CLI, which imports
# this module whether or not it checks a note; each expression is compiled on first use.
def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A getter for ``re.compile(pattern, flags)`` that compiles once, when first called."""
    return functools.cache(lambda: re.compile(pattern, flags))


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

_Span = tuple[int, int, str]  # start, end (in the scanned text), kind


@dataclass(frozen=True)
class SecretFinding:
    """One credential-like thing: what kind, in which field, on which line (1-based)."""

    kind: str
    field: str
    line: int

    def describe(self) -> str:
        """A phrase such as "a GitHub token in body line 3"; never contains the secret."""
        vowel_sound = self.kind[:1] in ("A", "E", "I", "O") or self.kind.startswith(("HTTP", "npm"))
        article = "an" if vowel_sound else "a"
        return f"{article} {self.kind} in {self.field} line {self.line}"


# --- value heuristics -------------------------------------------------------------------------

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


# --- rules --------------------------------------------------------------------------------------


# Plain slotted classes rather than dataclasses: each dataclass costs ~0.5 ms at import.
class _Subject:
    """The text under scan plus ASCII byte copies of it, exact and lower-cased.

    Non-ASCII characters become "?" (one byte each), so a position in a copy is the same
    position in ``text``. Substring search in bytes is several times faster than ``str.find``
    on text stored with two or four bytes per character, and lower-casing bytes never changes
    the length (``str.lower`` does, for U+0130).
    """

    __slots__ = ("exact", "lowered", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.exact = text.encode("ascii", "replace")
        self.lowered = self.exact.lower()


class _Rule:
    """A detector that runs only when one of ``hints`` occurs in the text.

    With ``ignore_case`` the hints are looked up in the lower-cased copy. Hints are plain
    substring searches, far cheaper than a regex scan, so a note without any hint costs
    almost nothing; most rules also start matching only where a hint occurs.
    """

    __slots__ = ("hints", "ignore_case", "scan")

    def __init__(
        self,
        hints: tuple[bytes, ...],
        scan: Callable[[_Subject], Iterator[_Span]],
        ignore_case: bool = False,
    ) -> None:
        self.hints = hints
        self.scan = scan
        self.ignore_case = ignore_case


def _pattern_rule(
    kind: str, prefixes: tuple[str, ...], pattern: str, accept: Callable[[str], bool]
) -> _Rule:
    """A rule for one token format that starts with one of ``prefixes``; the match is redacted."""
    compiled = _lazy(pattern)
    anchors = _ascii(prefixes)

    def scan(subject: _Subject) -> Iterator[_Span]:
        for match in _anchored_matches(subject.text, subject.exact, anchors, compiled()):
            if accept(match.group()):
                yield match.start(), match.end(), kind

    return _Rule(anchors, scan)


def _ascii(words: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(word.encode("ascii") for word in words)


def _body_after(prefix_length: int) -> Callable[[str], bool]:
    return lambda token: _plausible_token_body(token[prefix_length:])


def _find_all(haystack: bytes, needles: tuple[bytes, ...]) -> list[int]:
    positions: list[int] = []
    for needle in needles:
        position = haystack.find(needle)
        while position != -1:
            positions.append(position)
            position = haystack.find(needle, position + 1)
    positions.sort()
    return positions


def _anchored_matches(
    text: str, haystack: bytes, anchors: tuple[bytes, ...], pattern: re.Pattern[str]
) -> Iterator[re.Match[str]]:
    """Matches of ``pattern`` in ``text`` starting where an anchor occurs in ``haystack``.

    ``haystack`` is one of the byte copies of ``text`` (see :class:`_Subject`). Patterns that
    start with a look-behind, an alternation or case-insensitive letters get no literal-prefix
    search from the regex engine and cost a full scan; finding the anchors first is many times
    faster.
    """
    resume = 0
    for position in _find_all(haystack, anchors):
        if position < resume:
            continue
        match = pattern.match(text, position)
        if match is not None:
            resume = match.end()
            yield match


def _at_word_start(text: str, position: int) -> bool:
    return position == 0 or not text[position - 1].isalnum()


_B: Final = r"(?<![A-Za-z0-9_\-])"  # token start: not glued to a longer word
_E: Final = r"(?![A-Za-z0-9_\-])"  # token end

_PRIVATE_KEY_PATTERN: Final = (
    r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:\\[nr]|\s)+[A-Za-z][A-Za-z\-]*:[^\n\\]*)*"  # armour headers: Proc-Type, Version
    r"(?:\\[nr]|\s)+[A-Za-z0-9+/=]{16,}"
    r"(?:(?:\\[nr]|\r?\n)+[A-Za-z0-9+/=]+)*"
    r"(?:(?:\\[nr]|\s)*-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----)?"
)


def _jwt_ok(token: str) -> bool:
    return not _is_placeholder(token.rsplit(".", 1)[1])


def _openai_ok(token: str) -> bool:
    return _looks_random(token[3:], 20) and any(ch.isdigit() for ch in token)


_PRIVATE_KEY_RULE: Final = _pattern_rule(
    "private key block", ("-----BEGIN",), _PRIVATE_KEY_PATTERN, lambda _block: True
)
_TOKEN_RULES: Final = (
    _pattern_rule(
        "GitHub token",
        ("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_"),
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{50,255})" + _E,
        lambda token: _plausible_token_body(token.split("_", 1)[1].removeprefix("pat_")),
    ),
    _pattern_rule(
        "GitLab token",
        ("glpat-", "glptt-", "glrt-", "gldt-"),
        _B + r"gl(?:pat|ptt|rt|dt)-[A-Za-z0-9_\-]{20,255}",
        lambda token: _plausible_token_body(token.split("-", 1)[1]),
    ),
    _pattern_rule(
        "Slack webhook URL",
        ("https://hooks.slack.com/",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}",
        lambda url: _plausible_token_body(url.rsplit("/", 1)[1]),
    ),
    _pattern_rule(
        "Slack token",
        ("xox",),
        _B + r"xox[abposr]-[0-9]+-[A-Za-z0-9\-]{8,255}",
        _body_after(5),
    ),
    _pattern_rule(
        "Stripe live key",
        ("sk_live_", "rk_live_"),
        _B + r"(?:sk|rk)_live_[A-Za-z0-9]{20,255}" + _E,
        _body_after(8),
    ),
    _pattern_rule(
        "OpenAI/Anthropic API key", ("sk-",), _B + r"sk-[A-Za-z0-9_\-]{20,255}", _openai_ok
    ),
    _pattern_rule("Google API key", ("AIza",), _B + r"AIza[A-Za-z0-9_\-]{35}" + _E, _body_after(4)),
    _pattern_rule("npm token", ("npm_",), _B + r"npm_[A-Za-z0-9]{36}" + _E, _body_after(4)),
    _pattern_rule(
        "Hugging Face token", ("hf_",), _B + r"hf_[A-Za-z0-9]{34,40}" + _E, _body_after(3)
    ),
    _pattern_rule("PyPI token", ("pypi-",), _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}", _body_after(8)),
    _pattern_rule(
        "SendGrid API key",
        ("SG.",),
        _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E,
        _body_after(3),
    ),
    _pattern_rule(
        "JWT",
        ("eyJ",),
        _B + r"eyJ[A-Za-z0-9_\-]{7,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}" + _E,
        _jwt_ok,
    ),
)

_AWS_KEY_ID_RE: Final = _lazy(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
# The secret key printed right after its key id, as in the CSV AWS hands out.
_AWS_PAIR_RE: Final = _lazy(r"[\s,;:|\"'=]{1,5}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")


def _is_aws_secret_key(value: str) -> bool:
    return (
        len(value) == 40
        and any(ch.isdigit() for ch in value)
        and any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and not _is_placeholder(value)
    )


_AWS_PREFIXES: Final = (b"AKIA", b"ASIA")


def _scan_aws_access_keys(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.exact, _AWS_PREFIXES, _AWS_KEY_ID_RE()):
        if "EXAMPLE" in match.group():
            continue
        end = match.end()
        pair = _AWS_PAIR_RE().match(text, end)
        if pair and _is_aws_secret_key(pair.group(1)):
            end = pair.end()
        yield match.start(), end, "AWS access key"


# Starts at the literal "://" so the engine can search for it instead of trying a scheme at
# every letter.
_URL_PASSWORD_RE: Final = _lazy(
    r"://[^\s:/?#@\[\]\"'<>]*:(?P<secret>[^\s/?#@\"'<>]+)@"
    r"(?P<host>[^\s/?#@:\"'<>]*[A-Za-z0-9])"
)
# Documentation hosts (RFC 2606): https://user:pass@example.com is an illustration.
_EXAMPLE_HOST_RE: Final = _lazy(
    r"(?i)(?:.*\.)?(?:example\.(?:com|org|net)|[^.]+\.(?:example|test|invalid)|example)"
)
_URL_PLACEHOLDER_RE: Final = _lazy(
    r"(?i)(?:pass(?:word|wd)?|pwd|pw|secret|token|x+|\*+|\.+|…|changeme"
    r"|<[^>]*>|\{+[^}]*\}+|\[[^\]]*\]|\$\{?\w+\}?|%[a-z0-9_()]*s?)"
)


def _scan_url_passwords(subject: _Subject) -> Iterator[_Span]:
    if b"@" not in subject.exact:
        return
    for match in _URL_PASSWORD_RE().finditer(subject.text):
        password = match.group("secret")
        if len(password) < 3 or _EXAMPLE_HOST_RE().fullmatch(match.group("host")):
            continue
        if _URL_PLACEHOLDER_RE().fullmatch(password) or _is_placeholder(password):
            continue
        yield match.start("secret"), match.end("secret"), "URL with a password"


_BASIC_RE: Final = _lazy(
    r"basic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", re.IGNORECASE | re.ASCII
)


def _is_basic_credential(encoded: str) -> bool:
    if len(encoded) % 4:
        return False
    try:
        decoded = binascii.a2b_base64(encoded, strict_mode=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    _user, colon, password = decoded.partition(":")
    return (
        bool(colon and password)
        and decoded.isprintable()
        and not _URL_PLACEHOLDER_RE().fullmatch(password)
    )


def _scan_basic_credentials(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, (b"basic",), _BASIC_RE()):
        if _at_word_start(text, match.start()) and _is_basic_credential(match.group("secret")):
            yield match.start("secret"), match.end("secret"), "HTTP Basic credential"


_BEARER_RE: Final = _lazy(
    r"bearer[ \t]+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)", re.IGNORECASE | re.ASCII
)


def _scan_bearer_tokens(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, (b"bearer",), _BEARER_RE()):
        if _at_word_start(text, match.start()) and _looks_random(match.group("secret"), 16):
            yield match.start("secret"), match.end("secret"), "Bearer token"


# Matched from the key word on (found by substring search); the rest of the key name before it
# is read afterwards. "key" alone counts only after a qualifier: api_key, accessKey, ...
_ASSIGNMENT_RE: Final = _lazy(
    r"""
    (?P<word>
        passw(?:or)?d | passphrase | passcode | pass(?![a-z]) | pwd
      | secret | token | credentials? | key | auth(?:orization)?(?![a-z])
    )
    (?P<tail>[a-z0-9_.\-]{0,40})
    ["']?\]?  # closing a quoted key or a subscript: "api_key": ..., config['pwd'] = ...
    (?P<op>
        [ \t]*(?: :[ \t]*[a-z_][\w.\[\],|\ ]{0,40}?[ \t]*=(?![=>])  # annotated: `token: str = `
                | => | := | == | = | : | > )[ \t]*
      | [ \t]+is[ \t]+
    )
    (?:\*\*|__)?[ \t]*
    (?: "(?P<dq>[ !\#-~]{1,256})"
      | '(?P<sq>[ -&(-~]{1,256})'
      | `(?P<bq>[ -_a-~]{1,256})`
      | (?P<bare>[!\#-%(-+\--:=?-_a-~]{1,256})
    )
    """,
    re.IGNORECASE | re.VERBOSE | re.ASCII,
)
_ASSIGNMENT_ANCHORS: Final = _ascii(("pass", "pwd", "secret", "token", "key", "auth", "credential"))
_KEY_QUALIFIERS: Final = (
    "api",
    "access",
    "private",
    "secret",
    "signing",
    "encryption",
    "master",
    "session",
    "consumer",
    "license",
    "auth",
)
# Key names whose value describes a secret without being one: token_url, password_hash, ...
_DESCRIPTIVE_KEY_RE: Final = _lazy(
    r"(?:^|[_.\-])(?:hash(?:ed)?|digest|checksum|fingerprint|sha\d*|md5|len(?:gth)?|count"
    r"|size|max|min|ttl|expir\w*|type|url|uri|endpoint|file|path|dir|name|env|var|field"
    r"|policy|format|prefix|pattern|regex|header|label|hint|version|limit|usage|izer|id)s?$",
)
# Whole key names (lower-cased, separators removed) that hold values which are not credentials:
# pagination and idempotency tokens, CSRF tokens, .NET publicKeyToken, or words like "bypass".
_NON_CREDENTIAL_KEY_RE: Final = _lazy(
    r"public|csrf|xsrf|cursor|bypass|passport|compass"
    r"|(?:next|page|continuation|request|change|idempotency|sync|resume|cancel)token"
)
_SEPARATORS_RE: Final = _lazy(r"[_.\-]")
_QUOTED_VALUE_GROUPS: Final = ("dq", "sq", "bq")
_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _key_prefix(text: str, start: int) -> str:
    i = start
    while i > 0 and start - i < 40 and text[i - 1] in _KEY_CHARS:
        i -= 1
    return text[i:start]


def _assignment_kind(squashed: str) -> str:
    if "secretaccesskey" in squashed or ("aws" in squashed and "secret" in squashed):
        return "AWS secret access key"
    for needle, kind in (
        ("pass", "password assignment"),
        ("pwd", "password assignment"),
        ("apikey", "API key assignment"),
        ("privatekey", "private key assignment"),
        ("token", "token assignment"),
        ("secret", "secret assignment"),
        ("credential", "credential assignment"),
        ("auth", "authorization assignment"),
    ):
        if needle in squashed:
            return kind
    return "key assignment"


def _assignment_value(match: re.Match[str]) -> tuple[int, str]:
    value = match.group("bare")
    if value is not None:
        return match.start("bare"), value.rstrip(".,:;!?)]}\\")
    for group in _QUOTED_VALUE_GROUPS:
        value = match.group(group)
        if value is not None:
            return match.start(group), value
    raise AssertionError("the assignment pattern always captures a value")


def _scan_assignments(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, _ASSIGNMENT_ANCHORS, _ASSIGNMENT_RE()):
        start, value = _assignment_value(match)
        if len(value) < 8 or _DESCRIPTIVE_KEY_RE().search(match.group("tail").lower()):
            continue
        operator = match.group("op").strip()
        if not _looks_random(value, 10 if operator == "is" else 8):
            continue
        prefix = _key_prefix(text, match.start())
        # ">" only as in <password>value</password>, not a comparison or a regex group.
        if operator == ">" and not text[: match.start() - len(prefix)].endswith("<"):
            continue
        key = prefix + match.group("word") + match.group("tail")
        if value.rsplit(".", 1)[-1] == key:
            continue  # an alias or re-export: X = module.X
        squashed_prefix = _SEPARATORS_RE().sub("", prefix.lower())
        word = match.group("word").lower()
        if word == "key" and not squashed_prefix.endswith(_KEY_QUALIFIERS):
            continue
        squashed = squashed_prefix + word + _SEPARATORS_RE().sub("", match.group("tail").lower())
        if _NON_CREDENTIAL_KEY_RE().search(squashed):
            continue
        kind = _assignment_kind(squashed)
        if kind == "AWS secret access key" and not _is_aws_secret_key(value):
            kind = "secret assignment"
        yield start, start + len(value), kind


# Order is priority: when two rules claim overlapping text, the earlier (more specific) wins.
_RULES: Final[tuple[_Rule, ...]] = (
    _PRIVATE_KEY_RULE,
    _Rule(_AWS_PREFIXES, _scan_aws_access_keys),
    *_TOKEN_RULES,
    _Rule((b"://",), _scan_url_passwords),
    _Rule((b"basic",), _scan_basic_credentials, ignore_case=True),
    _Rule((b"bearer",), _scan_bearer_tokens, ignore_case=True),
    _Rule(_ASSIGNMENT_ANCHORS, _scan_assignments, ignore_case=True),
)


def _scan(text: str) -> list[_Span]:
    """Secret spans in already-normalised ``text``, sorted by position, never overlapping."""
    subject = _Subject(text)
    kept: list[_Span] = []
    for rule in _RULES:
        haystack = subject.lowered if rule.ignore_case else subject.exact
        if not any(map(haystack.__contains__, rule.hints)):
            continue
        for span in rule.scan(subject):
            if all(span[1] <= other[0] or span[0] >= other[1] for other in kept):
                kept.append(span)
    kept.sort()
    return kept


# --- normalisation ------------------------------------------------------------------------------


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


def _replace_spans(text: str, spans: Sequence[_Span], replacement: str) -> str:
    parts: list[str] = []
    position = 0
    for start, end, _kind in spans:
        parts.append(text[position:start])
        parts.append(replacement)
        position = end
    parts.append(text[position:])
    return "".join(parts)


# --- public API ---------------------------------------------------------------------------------


def find_secrets(fields: Mapping[str, str]) -> list[SecretFinding]:
    """Every credential-like finding in ``fields``, ordered by field order, then line."""
    findings: dict[SecretFinding, None] = {}  # ordered and free of duplicates
    for field_name, value in fields.items():
        if not value:
            continue
        text = _normalise(value)
        for start, _end, kind in _scan(text):
            findings[SecretFinding(kind, field_name, text.count("\n", 0, start) + 1)] = None
    return list(findings)


def check_no_secrets(fields: Mapping[str, str]) -> None:
    """Raise :class:`SecretError` naming the kind and place of the first credential found."""
    findings = find_secrets(fields)
    if not findings:
        return
    first = findings[0]
    where = first.describe()
    if len(findings) > 1:
        where += f", and {len(findings) - 1} more"
    raise SecretError(
        f"refused: this looks like a credential ({where}). Notes are plain files that may be "
        "synced; keep secrets in a password manager or environment variables and describe "
        "where they live instead.",
        field=first.field,
        line=first.line,
        kind=first.kind,
        findings=[{"kind": f.kind, "field": f.field, "line": f.line} for f in findings],
    )


def redact_secrets(text: str, replacement: str = "[REDACTED]") -> str:
    """``text`` with each detected secret replaced by ``replacement`` (see the module notes)."""
    normalised = _normalise(text)
    spans = _scan(normalised)
    if not spans:
        return text
    if normalised == text:
        return _replace_spans(text, spans, replacement)
    mapped, offsets = _normalise_with_offsets(text)
    if mapped != normalised:
        return _replace_spans(normalised, spans, replacement)
    original_spans = [(offsets[start], offsets[end - 1] + 1, kind) for start, end, kind in spans]
    return _replace_spans(text, original_spans, replacement)


#: What replaces a credential in text given to a model: visible, so the model can say that a
#: credential was there (and where it lives) without ever seeing it.
MODEL_MARKER: Final = "[credential removed]"


def redact_for_model(text: str) -> str:
    """``text`` as a model may see it: every detected credential replaced by the marker.

    Used for everything a note contributes to a prompt: the index, the recalled block, the
    results of the memory tools, extraction input.
    """
    return redact_secrets(text, MODEL_MARKER)


def redact_for_model_in(value: object) -> object:
    """:func:`redact_for_model` applied to every string of a JSON-like value (a tool result)."""
    if isinstance(value, str):
        return redact_for_model(value)
    if isinstance(value, list | tuple):
        return [redact_for_model_in(item) for item in value]
    if isinstance(value, dict):
        return {key: redact_for_model_in(item) for key, item in value.items()}
    return value
