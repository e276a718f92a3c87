"""Generic assignments: ``password=…``, ``"api_key": "…"``, ``the password is …``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from oharness.notes.secrets.rules import (
    _anchored_matches,
    _ascii,
    _is_aws_secret_key,
    _Span,
    _Subject,
)
from oharness.notes.secrets.values import _lazy, _looks_like_password

# Matched from the key word on (found by substring search); the rest of the key name before it
# is read afterwards. "key" alone counts only after a qualifier: api_key, accessKey, ...
_ASSIGNMENT_RE: Final = _lazy(
    r"""
    (?P<word>
        passw(?:or)?d | passphrase | passcode | pass(?![a-z]) | pwd | pw(?![a-z])
      | passwort | kennwort | wachtwoord | contrasena | senha
      | secret | token | credentials? | key | auth(?:orization)?(?![a-z])
    )
    (?P<tail>[a-z0-9_.\-]{0,40})
    ["']?\]?  # closing a quoted key or a subscript: "api_key": ..., config['pwd'] = ...
    (?P<op>
        [ \t]*(?: :[ \t]*[a-z_][\w.\[\],|\ ]{0,40}?[ \t]+=(?![=>])  # annotated: `token: str = `
                | => | := | == | = | : | > )[ \t]*
      | [ \t]+is[ \t]+
    )
    (?:\*\*|__)?[ \t]*
    (?: "(?P<dq>[ !\#-~]{1,256})"
      | '(?P<sq>[ -&(-~]{1,256})'
      | `(?P<bq>[ -_a-~]{1,256})`
      | (?P<bare>[!\#-&(-+\--:=?-_a-~]{1,256})
    )
    """,
    re.IGNORECASE | re.VERBOSE | re.ASCII,
)
_PASSWORD_KEYS: Final = ("pass", "pw", "kennwort", "wachtwoord", "contrasena", "senha")
_ASSIGNMENT_ANCHORS: Final = _ascii(
    (*_PASSWORD_KEYS, "secret", "token", "key", "auth", "credential")
)
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
    "account",  # Azure: AccountKey=...
    "admin",
    "app",
    "client",
    "hmac",
    "jwt",
    "server",
    "service",
    "storage",
    "subscription",
    "webhook",
    "write",
)
# Key names whose value describes a secret without being one: token_url, password_hash, ...
_DESCRIPTIVE_KEY_RE: Final = _lazy(
    r"(?:^|[_.\-])(?:hash(?:ed)?|digest|checksum|fingerprint|sha\d*|md5|len(?:gth)?|count"
    r"|size|max|min|ttl|expir\w*|type|url|uri|endpoint|file|path|dir|name|env|var|field"
    r"|policy|format|prefix|pattern|regex|header|label|hint|version|limit|usage|izer|id"
    r"|at|time(?:stamp)?|date|(?:chang|updat|rotat|creat)ed)s?$",
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
        *((word, "password assignment") for word in (*_PASSWORD_KEYS, "wort")),
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


def _assignment_value(match: re.Match[str], text: str) -> tuple[int, str]:
    value = match.group("bare")
    if value is not None:
        # "&" is part of a password, except in a query string: ?user=x&password=y&next=z.
        key_start = match.start() - len(_key_prefix(text, match.start()))
        if text[key_start - 1 : key_start] in ("?", "&"):
            value = value.split("&", 1)[0]
        return match.start("bare"), value.rstrip(".,:;!?)]}\\")
    for group in _QUOTED_VALUE_GROUPS:
        value = match.group(group)
        if value is not None:
            return match.start(group), value
    raise AssertionError("the assignment pattern always captures a value")


def _scan_assignments(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, _ASSIGNMENT_ANCHORS, _ASSIGNMENT_RE()):
        start, value = _assignment_value(match, text)
        if len(value) < 8 or _DESCRIPTIVE_KEY_RE().search(match.group("tail").lower()):
            continue
        operator = match.group("op").strip()
        word = match.group("word").lower()
        numeric_ok = word.startswith(("passw", "passc", *_PASSWORD_KEYS[1:])) or word == "pass"
        if not _looks_like_password(value, 10 if operator == "is" else 8, digits=numeric_ok):
            continue
        prefix = _key_prefix(text, match.start())
        # ">" only as in <password>value</password>, not a comparison or a regex group.
        if operator == ">" and not text[: match.start() - len(prefix)].endswith("<"):
            continue
        key = prefix + match.group("word") + match.group("tail")
        if value.rsplit(".", 1)[-1] == key:
            continue  # an alias or re-export: X = module.X
        squashed_prefix = _SEPARATORS_RE().sub("", prefix.lower())
        if word == "key" and not squashed_prefix.endswith(_KEY_QUALIFIERS):
            continue
        squashed = squashed_prefix + word + _SEPARATORS_RE().sub("", match.group("tail").lower())
        if _NON_CREDENTIAL_KEY_RE().search(squashed):
            continue
        kind = _assignment_kind(squashed)
        if kind == "AWS secret access key" and not _is_aws_secret_key(value):
            kind = "secret assignment"
        yield start, start + len(value), kind
