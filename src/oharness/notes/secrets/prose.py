"""Credentials written in prose or pasted without their labels.

- a value after a credential word in the same sentence ("The AWS secret for CI is 9dF3…",
  "Bob's password for the VPN is …"), judged like a generic-key rule with an entropy floor
  (gitleaks' ``generic-api-key``, detect-secrets' keyword detector): a password word needs a
  value that reads as a password, any other credential word a random-looking value of 16
  characters or more; hex digests, UUIDs and ULIDs never count;
- a password after "log in … with" ("log in to the admin as root with hunter2hunter2!");
- a bare 40-character AWS secret key in a note that names AWS or holds an access key id
  (trufflehog's AWS detector pairs them the same way);
- a private key's base64 body without its BEGIN line, recognised by its DER header (the
  version number that only private keys put first) or the OpenSSH magic;
- the key of a Google service-account JSON (its ``private_key`` and ``private_key_id``).
"""

from __future__ import annotations

import binascii
from collections.abc import Iterator
from typing import Final

from oharness.notes.secrets.assignments import _DESCRIPTIVE_KEY_RE, _NON_CREDENTIAL_KEY_RE
from oharness.notes.secrets.rules import (
    _AWS_KEY_ID_RE,
    _anchored_matches,
    _ascii,
    _find_all,
    _is_aws_secret_key,
    _Rule,
    _Span,
    _Subject,
)
from oharness.notes.secrets.values import _lazy, _looks_like_password, _looks_random

# --- a value after a credential word -----------------------------------------------------------

_PASSWORD_WORDS: Final = ("password", "passwd", "passphrase", "passcode", "pwd")
_SECRET_WORDS: Final = ("secret", "token", "api key", "apikey", "api-key", "access key")
_OTHER_WORDS: Final = ("private key", "credential", "creds", "signing key", "key")
_KEYWORD_HINTS: Final = _ascii(_PASSWORD_WORDS + _SECRET_WORDS + _OTHER_WORDS)
_WINDOW: Final = 100
_TOKEN_RE: Final = _lazy(r"\S+")
_TRIM_START: Final = "\"'`([{<*"
_TRIM_END: Final = "\"'`)]}>*.,;:"
# Identifiers with no secret in them: hex digests (commit ids, sha256), UUIDs, ULIDs, and
# digests behind their algorithm name (sha256:…, sha512-… in lock files).
_OPAQUE_ID_RE: Final = _lazy(
    r"(?i:(?:sha\d*|md5|blake2?b?|xxh\d*)[:\-=])?(?:[0-9a-f]{7,}|[0-9A-F]{7,}"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|[0-7][0-9A-HJKMNP-TV-Z]{25})"
    r"|(?i:sha(?:1|256|384|512))[:\-][A-Za-z0-9+/]{20,}={0,2}"
)
# The value is stated: "... password is X", "password: X", "password was X".
_STATED_RE: Final = _lazy(r"(?:\bis|\bwas|[:=])[ \t]*[\"'`]?$")
_SENTENCE_END_RE: Final = _lazy(r"[.;!?](?:\s|$)")


def _window(text: str, start: int) -> str:
    """What follows a keyword: the rest of its line (or the next line, after "is:" or ":")."""
    end = text.find("\n", start, start + _WINDOW)
    if end == -1:
        return text[start : start + _WINDOW]
    head = text[start:end]
    if head.strip(" \t:=-") in ("", "is"):
        following = text.find("\n", end + 1, end + 1 + _WINDOW)
        return text[start : following if following != -1 else end + 1 + _WINDOW]
    return head


# Code, not prose: an assignment, a call, a subscript, markup or a template.
_CODE_CHARACTERS: Final = frozenset("'\"`[]{}()<>=\\")


def _candidates(window: str, offset: int) -> Iterator[tuple[int, str]]:
    for match in _TOKEN_RE().finditer(window):
        token = match.group()
        if not _CODE_CHARACTERS.isdisjoint(token.strip(_TRIM_START + _TRIM_END)):
            continue
        trimmed = token.lstrip(_TRIM_START)
        start = offset + match.start() + len(token) - len(trimmed)
        trimmed = trimmed.rstrip(_TRIM_END)
        if len(trimmed) >= 8:
            yield start, trimmed


# Letters and digits run together, as people make passwords up: hunter2hunter2, Summer2024!
_MADE_UP_RE: Final = _lazy(r"(?=[^0-9]*[0-9])(?=(?:[^A-Za-z]*[A-Za-z]){4})[A-Za-z0-9]+[!?#*$%&+]*")


def _is_password_value(value: str, made_up: bool = True) -> bool:
    """A value after a password word: random-looking, or (``made_up``: right after "is", ":"
    or "with") letters and digits made up by hand."""
    if "@" in value[1:-1] or _OPAQUE_ID_RE().fullmatch(value):
        return False
    if made_up and _MADE_UP_RE().fullmatch(value):
        return True
    return _looks_like_password(value.rstrip("!?"), 8, digits=True)


def _is_secret_value(value: str) -> bool:
    return (
        len(value) >= 16
        and not _OPAQUE_ID_RE().fullmatch(value)
        and any(ch.isdigit() for ch in value)
        and _looks_random(value, 16)
    )


def _scan_keyword_values(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    lowered = subject.lowered
    done = 0
    for position in _find_all(lowered, _KEYWORD_HINTS):
        inside_word = position > 0 and 97 <= lowered[position - 1] <= 122
        if position < done or (inside_word and not text[position].isupper()):
            continue  # inside a word (monkey, turkey), unless camelCase (apiKey)
        word_end = position
        while word_end < len(text) and (text[word_end].isalnum() or text[word_end] in "_- "):
            if text[word_end] == " " and lowered[position:word_end] not in (b"api", b"access"):
                break
            word_end += 1
        word = lowered[position:word_end].decode("ascii", "replace")
        if _DESCRIPTIVE_KEY_RE().search(word) or _NON_CREDENTIAL_KEY_RE().search(word):
            continue  # token_url, password_hash, csrf_token: about a credential, not one
        password = word.startswith(("pass", "pwd"))
        window = _window(text, word_end)
        sentence = _SENTENCE_END_RE().search(window)
        if sentence is not None:
            window = window[: sentence.start()]
        for start, value in _candidates(window, word_end):
            if password:
                made_up = _STATED_RE().search(text, word_end, start) is not None
                found = _is_password_value(value, made_up)
            else:
                found = _is_secret_value(value)
            if found:
                done = start + len(value)
                yield start, done, "password in text" if password else "secret in text"
                break


# --- "log in … with <password>" ----------------------------------------------------------------

_LOGIN_RE: Final = _lazy(
    r"(?:log(?:ged|ging)?[ \-]?(?:in|on)(?:to)?|sign(?:ed|ing)?[ \-]?(?:in|on)(?:to)?)\b"
    r"[^\n]{0,100}?\b(?:with|using|pass(?:word)?|pw)[ \t]+"
    r"(?:(?:the[ \t]+)?(?:password|passphrase|pass|pw)[ \t]*[:=]?[ \t]*)?"
    r"(?P<value>\S+)",
    2,  # re.IGNORECASE, without importing re here
)
_LOGIN_HINTS: Final = _ascii(("log", "sign"))


def _scan_login_passwords(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, _LOGIN_HINTS, _LOGIN_RE()):
        raw = match.group("value")
        value = raw.lstrip(_TRIM_START).rstrip(_TRIM_END)
        start = match.start("value") + len(raw) - len(raw.lstrip(_TRIM_START))
        if len(value) >= 8 and _is_password_value(value):
            yield start, start + len(value), "password in text"


# --- a bare AWS secret key ---------------------------------------------------------------------

_AWS_SECRET_RE: Final = _lazy(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _scan_bare_aws_secrets(subject: _Subject) -> Iterator[_Span]:
    if b"aws" not in subject.lowered and not _AWS_KEY_ID_RE().search(subject.text):
        return
    for match in _AWS_SECRET_RE().finditer(subject.text):
        value = match.group()
        if _is_aws_secret_key(value) and _looks_random(value, 40):
            yield match.start(), match.end(), "AWS secret access key"


# --- a private key body without its BEGIN line -------------------------------------------------

_KEY_BODY_RE: Final = _lazy(
    r"(?<![A-Za-z0-9+/])(?:M[A-Za-z0-9+/]{2}|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/]{28,}={0,2}"
    r"(?:(?:\\[nr]|\r?\n)[A-Za-z0-9+/]{4,}={0,2})*"
)
_KEY_BODY_HINTS: Final = _ascii(("MII", "MIG", "MHc", "MC4", "MFM", "b3BlbnNzaC1rZXktdjE"))
_OPENSSH_MAGIC: Final = "b3BlbnNzaC1rZXktdjE"


def _is_private_key_der(head: str) -> bool:
    """Whether base64 ``head`` starts a DER private key: SEQUENCE, then version 0 or 1.

    PKCS#1 and PKCS#8 private keys and SEC 1 EC keys start with a small version INTEGER;
    certificates, public keys and certificate requests start with a nested SEQUENCE.
    """
    try:
        raw = binascii.a2b_base64(head[:32])
    except binascii.Error:
        return False
    if len(raw) < 8 or raw[0] != 0x30:
        return False
    index = 2 + (raw[1] & 0x7F if raw[1] & 0x80 else 0)
    return raw[index : index + 3] in (b"\x02\x01\x00", b"\x02\x01\x01")


def _scan_key_bodies(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.exact, _KEY_BODY_HINTS, _KEY_BODY_RE()):
        body = match.group()
        if body.startswith(_OPENSSH_MAGIC) or _is_private_key_der(body):
            yield match.start(), match.end(), "private key block"


# --- a Google service-account key --------------------------------------------------------------

_SERVICE_ACCOUNT_RE: Final = _lazy(r"\"private_key(?:_id)?\"\s*:\s*\"(?P<value>[^\"]{16,})\"")


def _scan_service_accounts(subject: _Subject) -> Iterator[_Span]:
    for match in _SERVICE_ACCOUNT_RE().finditer(subject.text):
        yield match.start("value"), match.end("value"), "Google service-account key"


PROSE_RULES: Final = (
    _Rule((b"service_account",), _scan_service_accounts),
    _Rule(_KEY_BODY_HINTS, _scan_key_bodies),
    _Rule((b"aws", b"akia", b"asia"), _scan_bare_aws_secrets, ignore_case=True),
    _Rule(_KEYWORD_HINTS, _scan_keyword_values, ignore_case=True),
    _Rule(_LOGIN_HINTS, _scan_login_passwords, ignore_case=True),
)
