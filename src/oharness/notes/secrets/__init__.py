"""Secret detection (spec 02.2): credentials are refused by ``remember`` and redacted elsewhere.

A curated table of rules, most of them a regular expression for one provider's token format
plus a validator that throws out placeholders (``ghp_xxxx…``, ``<your-token>``, ``${TOKEN}``).
Each rule names literal hints, at least one of which must occur in the text before it runs, and
starts matching only where a hint occurs, so an ordinary note costs a few dozen substring
searches and hardly any regex work (see ``bench/secrets_bench.py``).

Generic assignments (``password=…``, ``"api_key": "…"``, ``SECRET_TOKEN=…``, ``<password>…``,
``the password is …``; module ``assignments``) count when the value is a literal rather than
code: see :func:`~oharness.notes.secrets.values._looks_like_password`. An unquoted value ends
at whitespace, a quote, ``,``, ``;``, ``<`` or ``>``, and at ``&`` only in a query string. A
passphrase of words, a name (``config.api_key``, ``AUTH_TOKEN_V2``, ``getAccessToken``), a
template (``${X}``, ``%(x)s``, ``{{ x }}``), a path of names and a short value (under 8
characters; 10 after "is") pass. Names are read strictly (case runs with vowels, one capital
run per piece, no hex or base32, no rare letter pairs), so generated passwords with or without
punctuation are caught: ``bench/secrets_detection.py`` measures at most 0.3 % misses on 31 of
its 32 patterns and 0.75 % on 12-character values inside a sentence, with no false positive
on its prose and code corpus. The provider formats above are caught whatever their randomness.
The value heuristics live in ``values``, normalisation in ``normalise``, the token rules in
``rules``.

Prose and pasted forms (module ``prose``): a value after a credential word in the same
sentence, a bare AWS secret key in a note naming AWS or holding an access key id, a key body
without its BEGIN line, a PuTTY key's private lines, a service-account key. Beside a login
(module ``logins``): a password after "log in … with", a user and password pair, a password
on a command line, a value named after its word ("use … as the API token"). Encoded
forms (module ``decoded``): base64 runs, HTML entities, percent-encoding, escapes and reversed
tokens are decoded and scanned as well; a finding there covers the encoded characters.

Deliberately *not* detected: a bare 40-character base64 string with no mention of AWS (the bare
shape is ordinary base64), nor base64 that decodes to text; git
SHAs, UUIDs and hex digests on their own; ``data:`` URIs with base64 images (content, not
credentials; the token formats need characters or word boundaries that base64 data lacks); a
private-key header with no key material after it (prose about keys); the placeholder keys of
the AWS documentation (``…EXAMPLE…``); URLs with a password on documentation hosts
(``example.com``, ``*.test``, RFC 2606) or with a password under 3 characters.

Obfuscation: before matching, invisible characters (Unicode format characters and the default
ignorable code points: zero-width, bidi controls, soft hyphen, variation selectors, tag
characters, Hangul fillers) are deleted, the text is NFKD-normalised and stripped of combining
marks, so fullwidth and struck-through letters match too, and lookalike letters of other
scripts are read as Latin inside words that mix scripts (module ``normalise``). Pure-ASCII
text, the common case, skips these steps. Newlines survive them, so line
numbers refer to the text as the caller gave it.

Findings: :func:`find_secrets` takes named fields (``summary``, ``tags``, ``body``); pass tags
joined with newlines so that the line number is the tag's position. A kind seen twice on the
same line of a field is reported once. Nothing returned or raised contains the secret.

Redaction: :func:`redact_secrets` replaces the secret part only (the value of
``password=…``, the password of a URL, the token after ``Bearer``; a whole token or key block
otherwise) and returns text without secrets unchanged. When a secret was only visible after
normalisation, its span is mapped back onto the original text, so the rest keeps its
invisible and fullwidth characters; in the rare case where character-by-character
normalisation disagrees with whole-string normalisation (the reordering of marks outside the
stripped blocks), the redacted *normalised* text is returned instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from oharness.errors import SecretError
from oharness.notes.invisible import escape_invisible
from oharness.notes.secrets.assignments import _ASSIGNMENT_ANCHORS, _scan_assignments
from oharness.notes.secrets.decoded import decoded_views
from oharness.notes.secrets.logins import LOGIN_RULES
from oharness.notes.secrets.normalise import _COMBINING_RE, _normalise, _normalise_with_offsets
from oharness.notes.secrets.prose import PROSE_RULES
from oharness.notes.secrets.rules import (
    _AWS_PREFIXES,
    _PRIVATE_KEY_RULE,
    _PROVIDER_RULES,
    _TOKEN_RULES,
    _Rule,
    _scan_aws_access_keys,
    _scan_basic_credentials,
    _scan_bearer_tokens,
    _scan_url_passwords,
    _Span,
    _Subject,
)

__all__ = [
    "MODEL_MARKER",
    "SecretFinding",
    "check_no_secrets",
    "find_secrets",
    "redact_for_model",
    "redact_for_model_in",
    "redact_secrets",
]


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


# Order is priority: when two rules claim overlapping text, the earlier (more specific) wins.
_RULES: Final[tuple[_Rule, ...]] = (
    _PRIVATE_KEY_RULE,
    _Rule(_AWS_PREFIXES, _scan_aws_access_keys),
    *_TOKEN_RULES,
    *_PROVIDER_RULES,
    _Rule((b"://",), _scan_url_passwords),
    _Rule((b"basic",), _scan_basic_credentials, ignore_case=True),
    _Rule((b"bearer",), _scan_bearer_tokens, ignore_case=True),
    _Rule(_ASSIGNMENT_ANCHORS, _scan_assignments, ignore_case=True),
    *PROSE_RULES,
    *LOGIN_RULES,
)
# A token written backwards starts with its prefix reversed: "_phg" for "ghp_". A few
# distinctive reversed prefixes, each a substring search on every scan, so kept short.
_REVERSED_HINTS: Final = (
    b"_phg",
    b"_ohg",
    b"_shg",
    b"_tap_buhtig",
    b"-tapl",
    b"-ks",
    b"xox",  # the same backwards: any Slack token (xoxb-, xoxa-, …)
    b"_tset_",
    b"AIKA",
    b"AISA",
    b"_evil_",
    b"_mpn",
    b"azIA",
    b"_fh",
)


def _keep(kept: list[_Span], span: _Span) -> None:
    if all(span[1] <= other[0] or span[0] >= other[1] for other in kept):
        kept.append(span)


def _keep_union(kept: list[_Span], span: _Span) -> None:
    """Keep ``span``, merged with the spans it overlaps (the kind of the first found)."""
    start, end, kind = span
    for other in [other for other in kept if start < other[1] and end > other[0]]:
        kept.remove(other)
        start, end, kind = min(start, other[0]), max(end, other[1]), other[2]
    kept.append((start, end, kind))


def _scan_subject(subject: _Subject, kept: list[_Span]) -> None:
    for rule in _RULES:
        haystack = subject.lowered if rule.ignore_case else subject.exact
        if not any(map(haystack.__contains__, rule.hints)):
            continue
        for span in rule.scan(subject):
            _keep(kept, span)


def _scan(text: str) -> list[_Span]:
    """Secret spans in already-normalised ``text``, sorted by position, never overlapping.

    The text as written first, then what its encodings hide (module ``decoded``): a finding
    there covers the encoded characters it came from.
    """
    subject = _Subject(text)
    kept: list[_Span] = []
    _scan_subject(subject, kept)
    for view in decoded_views(text, subject.exact, _REVERSED_HINTS):
        found: list[_Span] = []
        _scan_subject(_Subject(view.text), found)
        for start, end, kind in found:
            _keep_union(kept, (*view.source_span(start, end), f"{kind} ({view.label})"))
    kept.sort()
    return kept


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
    summary, body = fields.get("summary"), fields.get("body")
    if summary and body:  # "The VPN password is" and the password as the body's first line:
        head = _normalise(summary) + "\n"  # only that line is read past the summary's end
        text = head + _normalise(body.partition("\n")[0])
        for start, _end, kind in _scan(text):
            if start >= len(head):
                findings.setdefault(SecretFinding(kind, "body", 1), None)
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


def _past_marks(text: str, end: int) -> int:
    """``end`` moved past the combining marks that decorate the character before it."""
    while end < len(text) and _COMBINING_RE().match(text, end):
        end += 1
    return end


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
    original_spans = [
        (offsets[start], _past_marks(text, offsets[end - 1] + 1), kind)
        for start, end, kind in spans
    ]
    return _replace_spans(text, original_spans, replacement)


#: What replaces a credential in text given to a model: visible, so the model can say that a
#: credential was there (and where it lives) without ever seeing it.
MODEL_MARKER: Final = "[credential removed]"


def redact_for_model(text: str) -> str:
    """``text`` as a model may see it: every detected credential replaced by the marker, and
    every invisible character (bidi controls, zero-width and tag characters…) shown as an
    escape (:mod:`oharness.notes.invisible`), so hidden text is never read as instructions.

    Used for everything a note contributes to a prompt: the index, the recalled block, the
    results of the memory tools, extraction input.
    """
    return escape_invisible(redact_secrets(text, MODEL_MARKER))


def redact_for_model_in(value: object) -> object:
    """:func:`redact_for_model` applied to every string of a JSON-like value (a tool result)."""
    if isinstance(value, str):
        return redact_for_model(value)
    if isinstance(value, list | tuple):
        return [redact_for_model_in(item) for item in value]
    if isinstance(value, dict):
        return {key: redact_for_model_in(item) for key, item in value.items()}
    return value
