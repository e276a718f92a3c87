"""Secret detection (spec 02.2): credentials are refused by ``remember`` and redacted elsewhere.

A curated table of rules, most of them a regular expression for one provider's token format
plus a validator that throws out placeholders (``ghp_xxxx…``, ``<your-token>``, ``${TOKEN}``).
Each rule also names literal hints, at least one of which must occur in the text before its
expression runs, so an ordinary note costs a few substring searches and no regex scan.

Generic assignments (``password=…``, ``"api_key": "…"``, ``SECRET_TOKEN=…``) count only when the
value looks machine-generated or password-like; see :func:`_looks_random` for the rule.
Deliberately *not* detected: a bare 40-character base64 string (an AWS secret key is only
recognised next to its key name or access key id, because the bare shape is indistinguishable
from ordinary base64), git SHAs, UUIDs and hex digests on their own, ``data:`` URIs with base64
images (content, not credentials), a private-key header with no key material after it, and the
placeholder keys printed in AWS documentation (``…EXAMPLE…``).

Obfuscation: before matching, invisible characters (Unicode format characters, the default
ignorable code points: zero-width, bidi controls, soft hyphen, variation selectors, tag
characters, Hangul fillers) are deleted and the text is NFKC-normalised, so fullwidth letters
match too. Pure-ASCII text, the common case, skips both steps. Newlines survive both, so line
numbers refer to the text as the caller gave it.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from oharness.errors import SecretError

__all__ = ["SecretFinding", "check_no_secrets", "find_secrets", "redact_secrets"]

# Unicode category Cf plus the Default_Ignorable_Code_Point set, written out by hand because
# computing it with unicodedata at import would cost milliseconds on every CLI start.
_INVISIBLE_CLASS: Final = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_INVISIBLE_RE: Final = re.compile(f"[{_INVISIBLE_CLASS}]+")

_Span = tuple[int, int, str]  # start, end (in the scanned text), kind


@dataclass(frozen=True)
class SecretFinding:
    """One credential-like thing: what kind, in which field, on which line (1-based)."""

    kind: str
    field: str
    line: int

    def describe(self) -> str:
        """A phrase such as "a GitHub token in body line 3"; never contains the secret."""
        article = "an" if self.kind[:1] in ("A", "E", "I", "O") else "a"
        if self.kind.startswith("HTTP"):
            article = "an"
        return f"{article} {self.kind} in {self.field} line {self.line}"


# --- value heuristics -------------------------------------------------------------------------

_PLACEHOLDER_WORDS_RE: Final = re.compile(
    r"example|sample|placeholder|your|redacted|changeme|change[_-]me|dummy|fake|test"
    r"|[xX*•]{4}|\.\.\.|…|(.)\1{4}",
    re.IGNORECASE,
)
# A template, variable or expression rather than a literal: ${X}, $X, $(cmd), {{ x }}, %(x)s,
# <your-token>, {name}, os.environ[...], get_token(), bcrypt.hash(pw).
_CODE_REFERENCE_RE: Final = re.compile(
    r"[$%{<\[@!&*]|[A-Za-z_][\w.]*\s*[(\[]|.*(?:\{\{|\}\}|\$\{|\$\()",
)
# Words, snake_case, camelCase, CONSTANT_CASE, dotted names, e-mail addresses and slash paths
# made of word-like segments (letters, then optional digits): config.api_key, AUTH_TOKEN_V2.
_IDENTIFIER_RE: Final = re.compile(
    r"[_.\-:/@+]*[A-Za-z]+[0-9]*(?:[_.\-:/@+]+(?:[A-Za-z]+[0-9]*|[0-9]{1,8}))*[_.\-:/@+]*"
)
# Numbers, dates, times, versions and addresses: 4096, 2024-01-15T10:00:00Z, v1.2.3-beta.
_NUMERIC_RE: Final = re.compile(r"[vV]?[0-9]+(?:[.\-+_:/,][0-9A-Za-z]+)*")
_PATH_OR_URL_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://|~?\.{0,2}/|[A-Za-z]:\\")


def _shannon_entropy(value: str) -> float:
    n = len(value)
    return -sum(
        (count / n) * math.log2(count / n) for count in (value.count(ch) for ch in set(value))
    )


def _is_placeholder(value: str) -> bool:
    return _PLACEHOLDER_WORDS_RE.search(value) is not None


def _looks_random(value: str, min_length: int) -> bool:
    """Whether ``value`` looks like a generated token or a password rather than a word or code.

    The rule: at least ``min_length`` characters, no whitespace, not a placeholder, template or
    code reference, not a number/date/version, path or URL, not an identifier made of word-like
    segments; it must mix letters with digits or symbols (letters alone read as words), and its
    Shannon entropy must reach ``min(3.0, 0.8 * log2(length))`` bits per character (3.0 from 14
    characters on; 2.4 for 8 characters, i.e. nearly all distinct).
    """
    n = len(value)
    if n < min_length or not value.isascii() or any(ch.isspace() for ch in value):
        return False
    if _is_placeholder(value) or _CODE_REFERENCE_RE.match(value):
        return False
    if _NUMERIC_RE.fullmatch(value) or _PATH_OR_URL_RE.match(value):
        return False
    if _IDENTIFIER_RE.fullmatch(value):
        return False
    if value.isalpha():
        return False
    return _shannon_entropy(value) >= min(3.0, 0.8 * math.log2(n))


def _plausible_token_body(body: str) -> bool:
    """A provider token after its prefix: not a placeholder and not all one kind of character."""
    if _is_placeholder(body):
        return False
    return not (body.isalpha() and (body.islower() or body.isupper())) and not body.isdigit()


# --- rules --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PatternRule:
    """A regex for one format; ``secret`` group (or the whole match) is the span to redact."""

    kind: str
    hints: tuple[str, ...]
    pattern: re.Pattern[str]
    accept: Callable[[str], bool]

    def scan(self, text: str, lowered: str) -> Iterator[_Span]:
        if not any(hint in text for hint in self.hints):
            return
        for match in self.pattern.finditer(text):
            group = "secret" if "secret" in self.pattern.groupindex else 0
            if self.accept(match.group(group)):
                yield match.start(group), match.end(group), self.kind


def _body_after(prefix_length: int) -> Callable[[str], bool]:
    return lambda token: _plausible_token_body(token[prefix_length:])


def _jwt_ok(token: str) -> bool:
    return not _is_placeholder(token.rsplit(".", 1)[1])


def _openai_ok(token: str) -> bool:
    return _looks_random(token[3:], 20) and any(ch.isdigit() for ch in token)


_B = r"(?<![A-Za-z0-9_\-])"  # token start: not glued to a longer word
_E = r"(?![A-Za-z0-9_\-])"  # token end

_PRIVATE_KEY_RE: Final = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:\\[nr]|\s)+[A-Za-z][A-Za-z\-]*:[^\n]*)*"  # armour headers: Proc-Type, Version
    r"(?:\\[nr]|\s)+[A-Za-z0-9+/=]{16,}"
    r"(?:(?:\\[nr]|\r?\n)+[A-Za-z0-9+/=]+)*"
    r"(?:(?:\\[nr]|\s)*-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----)?"
)

_PATTERN_RULES: Final[tuple[_PatternRule, ...]] = (
    _PatternRule(
        "private key block", ("PRIVATE KEY",), _PRIVATE_KEY_RE, lambda _block: True
    ),
    _PatternRule(
        "GitHub token",
        ("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_"),
        re.compile(_B + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{50,255})" + _E),
        lambda token: _plausible_token_body(token.split("_", 1)[1].removeprefix("pat_")),
    ),
    _PatternRule(
        "GitLab token",
        ("glpat-", "glptt-", "glrt-", "gldt-"),
        re.compile(_B + r"gl(?:pat|ptt|rt|dt)-[A-Za-z0-9_\-]{20,255}"),
        lambda token: _plausible_token_body(token.split("-", 1)[1]),
    ),
    _PatternRule(
        "Slack webhook URL",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}"),
        lambda url: _plausible_token_body(url.rsplit("/", 1)[1]),
    ),
    _PatternRule(
        "Slack token",
        ("xox",),
        re.compile(_B + r"xox[abposr]-[0-9]+-[A-Za-z0-9\-]{8,255}"),
        _body_after(5),
    ),
    _PatternRule(
        "Stripe live key",
        ("_live_",),
        re.compile(_B + r"(?:sk|rk)_live_[A-Za-z0-9]{20,255}" + _E),
        _body_after(8),
    ),
    _PatternRule(
        "OpenAI/Anthropic API key",
        ("sk-",),
        re.compile(_B + r"sk-[A-Za-z0-9_\-]{20,255}"),
        _openai_ok,
    ),
    _PatternRule(
        "Google API key",
        ("AIza",),
        re.compile(_B + r"AIza[A-Za-z0-9_\-]{35}" + _E),
        _body_after(4),
    ),
    _PatternRule(
        "npm token", ("npm_",), re.compile(_B + r"npm_[A-Za-z0-9]{36}" + _E), _body_after(4)
    ),
    _PatternRule(
        "Hugging Face token",
        ("hf_",),
        re.compile(_B + r"hf_[A-Za-z0-9]{34,40}" + _E),
        _body_after(3),
    ),
    _PatternRule(
        "PyPI token",
        ("pypi-",),
        re.compile(_B + r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
        _body_after(8),
    ),
    _PatternRule(
        "SendGrid API key",
        ("SG.",),
        re.compile(_B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E),
        _body_after(3),
    ),
    _PatternRule(
        "JWT",
        ("eyJ",),
        re.compile(_B + r"eyJ[A-Za-z0-9_\-]{7,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}" + _E),
        _jwt_ok,
    ),
)

_AWS_KEY_ID_RE: Final = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
# The secret key printed right after its key id, as in the CSV AWS hands out.
_AWS_PAIR_RE: Final = re.compile(r"[\s,;:|\"'=]{1,5}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")


def _is_aws_secret_key(value: str) -> bool:
    return (
        len(value) == 40
        and any(ch.isdigit() for ch in value)
        and any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and not _is_placeholder(value)
    )


def _scan_aws_access_keys(text: str, lowered: str) -> Iterator[_Span]:
    if "AKIA" not in text and "ASIA" not in text:
        return
    for match in _AWS_KEY_ID_RE.finditer(text):
        if "EXAMPLE" in match.group():
            continue
        end = match.end()
        pair = _AWS_PAIR_RE.match(text, end)
        if pair and _is_aws_secret_key(pair.group(1)):
            end = pair.end()
        yield match.start(), end, "AWS access key"


_URL_PASSWORD_RE: Final = re.compile(
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://"
    r"[^\s:/?#@\[\]\"'<>]*:(?P<secret>[^\s/?#@\"'<>]+)@[^\s/?#@]*[A-Za-z0-9]"
)
_URL_PLACEHOLDER_RE: Final = re.compile(
    r"(?i)(?:pass(?:word|wd)?|pwd|pw|secret|token|x+|\*+|\.+|…|changeme"
    r"|<[^>]*>|\{+[^}]*\}+|\[[^\]]*\]|\$\{?\w+\}?|%[a-z0-9_()]*s?)"
)


def _scan_url_passwords(text: str, lowered: str) -> Iterator[_Span]:
    if "://" not in text or "@" not in text:
        return
    for match in _URL_PASSWORD_RE.finditer(text):
        password = match.group("secret")
        if _URL_PLACEHOLDER_RE.fullmatch(password) or _is_placeholder(password):
            continue
        yield match.start("secret"), match.end("secret"), "URL with a password"


_BASIC_RE: Final = re.compile(
    r"(?i)(?<![A-Za-z0-9])basic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"
)


def _is_basic_credential(encoded: str) -> bool:
    if len(encoded) % 4:
        return False
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return (
        bool(colon and password)
        and decoded.isprintable()
        and not _URL_PLACEHOLDER_RE.fullmatch(password)
    )


def _scan_basic_credentials(text: str, lowered: str) -> Iterator[_Span]:
    if "basic" not in lowered:
        return
    for match in _BASIC_RE.finditer(text):
        if _is_basic_credential(match.group("secret")):
            yield match.start("secret"), match.end("secret"), "HTTP Basic credential"


_BEARER_RE: Final = re.compile(
    r"(?i)(?<![A-Za-z0-9])bearer[ \t]+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)"
)


def _scan_bearer_tokens(text: str, lowered: str) -> Iterator[_Span]:
    if "bearer" not in lowered:
        return
    for match in _BEARER_RE.finditer(text):
        if _looks_random(match.group("secret"), 16):
            yield match.start("secret"), match.end("secret"), "Bearer token"


# The key word is matched on its own (a regex that first consumed the whole key would backtrack
# over every word of the text); the rest of the key name is read around it afterwards.
_ASSIGNMENT_RE: Final = re.compile(
    r"""
    (?P<word>
        passw(?:or)?d | passphrase | passcode | pass(?![a-z]) | pwd
      | secret | token | credentials? | api[_.\-]?key
      | (?:access|private|signing|encryption|master|session|consumer|license)[_.\-]?key
      | auth(?:orization|[_.\-]?key)?(?![a-z])
    )
    (?P<tail>[a-z0-9_.\-]{0,40})
    ["']?
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
    re.IGNORECASE | re.VERBOSE,
)
_ASSIGNMENT_HINTS: Final = ("pass", "pwd", "secret", "token", "key", "auth", "credential")
# Key names whose value describes a secret without being one: token_url, password_hash, ...
_DESCRIPTIVE_KEY_RE: Final = re.compile(
    r"(?:hash(?:ed)?|digest|checksum|fingerprint|sha\d*|md5|len(?:gth)?|count|size|max|min|ttl"
    r"|expir\w*|type|url|uri|endpoint|file|path|dir|name|env|var|field|policy|format|prefix"
    r"|pattern|regex|header|label|hint|version|limit|usage|izer)s?$",
)
_VALUE_GROUPS: Final = ("dq", "sq", "bq", "bare")
_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _key_prefix(text: str, start: int) -> str:
    i = start
    while i > 0 and start - i < 40 and text[i - 1] in _KEY_CHARS:
        i -= 1
    return text[i:start]


def _assignment_kind(key: str) -> str:
    squashed = re.sub(r"[_.\-]", "", key.lower())
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


def _scan_assignments(text: str, lowered: str) -> Iterator[_Span]:
    if not any(hint in lowered for hint in _ASSIGNMENT_HINTS):
        return
    for match in _ASSIGNMENT_RE.finditer(text):
        tail = match.group("tail").lower()
        if _DESCRIPTIVE_KEY_RE.search(tail):
            continue
        group = next(name for name in _VALUE_GROUPS if match.group(name) is not None)
        start, end = match.span(group)
        value = match.group(group)
        if group == "bare":
            value = value.rstrip(".,:;!?)]}")
            end = start + len(value)
        is_prose = match.group("op").strip() == "is"
        if not _looks_random(value, 10 if is_prose else 8):
            continue
        key = _key_prefix(text, match.start()) + match.group("word") + match.group("tail")
        kind = _assignment_kind(key)
        if kind == "AWS secret access key" and not _is_aws_secret_key(value):
            kind = "secret assignment"
        yield start, end, kind


# Order is priority: when two rules claim overlapping text, the earlier (more specific) wins.
_SCANNERS: Final[tuple[Callable[[str, str], Iterator[_Span]], ...]] = (
    _PATTERN_RULES[0].scan,
    _scan_aws_access_keys,
    *(rule.scan for rule in _PATTERN_RULES[1:]),
    _scan_url_passwords,
    _scan_basic_credentials,
    _scan_bearer_tokens,
    _scan_assignments,
)


def _scan(text: str) -> list[_Span]:
    """Secret spans in already-normalised ``text``, sorted by position, never overlapping."""
    lowered = text.lower()
    kept: list[_Span] = []
    for scanner in _SCANNERS:
        for span in scanner(text, lowered):
            if all(span[1] <= other[0] or span[0] >= other[1] for other in kept):
                kept.append(span)
    kept.sort()
    return kept


# --- normalisation ------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", _INVISIBLE_RE.sub("", text))


def _normalise_with_offsets(text: str) -> tuple[str, list[int]]:
    """Character by character normalisation, with each output index's source index."""
    pieces: list[str] = []
    offsets: list[int] = []
    for index, char in enumerate(text):
        if _INVISIBLE_RE.match(char):
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
    """Every credential-like finding in ``fields``, ordered by field order, then line.

    Pass tags joined with newlines so that the line number is the tag's position. A kind found
    twice on the same line is reported once.
    """
    findings: list[SecretFinding] = []
    for field_name, value in fields.items():
        if not value:
            continue
        text = _normalise(value)
        for start, _end, kind in _scan(text):
            finding = SecretFinding(kind, field_name, text.count("\n", 0, start) + 1)
            if finding not in findings:
                findings.append(finding)
    return findings


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
    """``text`` with each detected secret replaced by ``replacement``.

    Text without secrets comes back unchanged. When invisible or compatibility characters had
    to be normalised away to see a secret, the secret's span is mapped back onto the original
    text; in the rare case where character-by-character normalisation disagrees with
    whole-string normalisation (combining sequences), the redacted *normalised* text is
    returned instead, so the invisible characters and fullwidth forms are gone from it.
    """
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
