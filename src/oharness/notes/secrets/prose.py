"""Credentials written in prose or pasted without their labels.

- a value after a credential word in the same sentence ("The AWS secret for CI is 9dF3…",
  "Bob's password for the VPN is …"), judged like a generic-key rule with an entropy floor
  (gitleaks' ``generic-api-key``, detect-secrets' keyword detector): a password word needs a
  value that reads as a password, any other credential word a random-looking value of 16
  characters or more; hex digests, UUIDs and ULIDs never count;
- passwords beside a login, and values named after their word: module ``logins``;
- a bare 40-character AWS secret key in a note that names AWS or holds an access key id
  (trufflehog's AWS detector pairs them the same way);
- a private key's base64 body without its BEGIN line, recognised by its DER header (the
  version number that only private keys put first) or the OpenSSH magic;
- the key of a Google service-account JSON (its ``private_key`` and ``private_key_id``).
"""

from __future__ import annotations

import binascii
import functools
import re
import unicodedata
from collections.abc import Iterator
from typing import Final

from oharness.notes.secrets.assignments import _DESCRIPTIVE_KEY_RE, _NON_CREDENTIAL_KEY_RE
from oharness.notes.secrets.decoded import long_pieces
from oharness.notes.secrets.rules import (
    _AWS_KEY_ID_RE,
    _anchored_matches,
    _ascii,
    _is_aws_secret_key,
    _Rule,
    _Span,
    _Subject,
)
from oharness.notes.secrets.values import (
    _lazy,
    _looks_like_password,
    _looks_random,
    _shannon_entropy,
)

# --- a value after a credential word -----------------------------------------------------------

# Also "pw", and the password words of the languages notes are written in (accents are
# removed before the scan: "contrasena" is "contraseña"; a letter NFKD keeps is "?" in the
# scanned bytes: "has?o" is "hasło").
_PASSWORD_WORDS: Final = (
    *("password", "passwd", "passphrase", "passcode", "pwd", "pw"),
    *("passwort", "kennwort", "wachtwoord", "mot de passe", "contrasena", "senha"),
    *("losenord", "losenordet", "passord", "passordet", "adgangskode", "adgangskoden"),
    *("salasana", "jelszo", "heslo", "sifre", "sifresi", "has?o", "has?a"),
)
_SECRET_WORDS: Final = ("secret", "token", "api key", "apikey", "api-key", "access key", "pat")
_OTHER_WORDS: Final = (
    *("private key", "signing key", "secret key", "hmac key", "master key", "encryption key"),
    "license key",
    *("credential", "creds", "key"),
)
_KEYWORD_HINTS: Final = _ascii(_PASSWORD_WORDS + _SECRET_WORDS + _OTHER_WORDS)
_WINDOW: Final = 100
_TOKEN_RE: Final = _lazy(r"\S+")
_TRIM_START: Final = "\"'`([{<*"
_TRIM_END: Final = "\"'`)]}>.,;:"


def _trimmed(raw: str) -> tuple[int, str]:
    """A token without the quotes, brackets and marks around it, and where that value starts."""
    opened = raw.lstrip(_TRIM_START)
    return len(raw) - len(opened), opened.rstrip(_TRIM_END)


# Identifiers with no secret in them: hex digests (commit ids, sha256), UUIDs, ULIDs, and
# digests behind their algorithm name (sha256:…, sha512-… in lock files).
_OPAQUE_ID_RE: Final = _lazy(
    r"(?i:(?:sha\d*|md5|blake2?b?|xxh\d*)[:\-=])?(?:[0-9a-f]{7,}|[0-9A-F]{7,}"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|[0-7][0-9A-HJKMNP-TV-Z]{25})"
    r"|(?i:sha(?:1|256|384|512))[:\-][A-Za-z0-9+/]{20,}={0,2}"
)
# Words joined by dashes with a short tail: a note's id ("aws-creds-for-deploy-5f0") or a
# slug, named beside a credential word and no secret.
_SLUG_RE: Final = _lazy(r"[a-z]{2,}(?:-[a-z]{2,})+-[0-9a-z]{1,6}")
# The value is stated: "... password is X", "password: X", "password was X"; in German,
# French, Spanish, Portuguese, Italian and Dutch too ("Passwort lautet X", "mot de passe est X";
# the "é" and "è" of "a senha é X", "la password è X" are scanned without their accents).
_STATED_RE: Final = _lazy(
    r"(?:\b(?:is|was|now|to|with|ist|lautet|war|est|es|era|e|ar|er|je)|[:=\-–—]|->)[ \t]*[\"'`]?$"
)
_SENTENCE_END_RE: Final = _lazy(r"[.;!?](?:\s|$)")


def _window(text: str, start: int) -> str:
    """What follows a keyword: the rest of its line, or the next line after "is", ":" or a
    label ("DB password" alone on its line), not after a sentence ending in the word ("…
    asks for the password")."""
    end = text.find("\n", start, start + _WINDOW)
    if end == -1:
        return text[start : start + _WINDOW]
    head = text[start:end]
    stated = head.strip(" \t:=-") == "is" or (head.strip() != "" and head.strip(" \t:=-") == "")
    label = head.strip() == "" and len(text[text.rfind("\n", 0, start) + 1 : start].split()) <= 3
    if stated or label:
        following = text.find("\n", end + 1, end + 1 + _WINDOW)
        return text[start : following if following != -1 else end + 1 + _WINDOW]
    return head


# Code, not prose: a call, a subscript, markup, a template, or an attribute (name="…").
_CODE_CHARACTERS: Final = frozenset("'\"`[]{}()<>\\")
_ATTRIBUTE_RE: Final = _lazy(r"(?:^|.*[&?])[A-Za-z_][\w.\-]*=|=")
_EMAIL_RE: Final = _lazy(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")


def _candidates(window: str, offset: int) -> Iterator[tuple[int, str]]:
    for match in _TOKEN_RE().finditer(window):
        token = match.group()
        inner = token.strip(_TRIM_START + _TRIM_END)
        if not _CODE_CHARACTERS.isdisjoint(inner) or _ATTRIBUTE_RE().match(inner):
            continue
        trimmed = token.lstrip(_TRIM_START)
        start = offset + match.start() + len(token) - len(trimmed)
        trimmed = trimmed.rstrip(_TRIM_END)
        if token.startswith("*"):  # **bold**, not a password ending in "*"
            trimmed = trimmed.rstrip("*")
        if len(trimmed) >= 6:
            yield start, trimmed


# Password managers whose name reads as a made-up password.
_WHERE_SECRETS_LIVE: Final = frozenset(("1password", "1password.com", "keepassxc"))

# Hashing, cipher and encoding names, which read as made-up passwords ("argon2id", "pbkdf2").
_ALGORITHM_RE: Final = _lazy(
    r"(?i:argon2(?:id|i|d)?|[bs]crypt\w*|pbkdf2[\w\-]*|sha-?\d+[\w\-]*|md[45]|aes-?\d+[\w\-]*"
    r"|rsa-?\d+|ed(?:25519|448)|x25519|chacha20[\w\-]*|hmac[\w\-]*|base(?:32|58|64)\w*|utf-?(?:8|16)"
    r"|tls-?1\.?\d|blake[23]\w*|crc32c?|xxh\w*|murmur\w*)"
)

# Letters and digits run together, as people make passwords up: hunter2hunter2, Summer2024!
_MADE_UP_RE: Final = _lazy(r"(?=[^0-9]*[0-9])(?=(?:[^A-Za-z]*[A-Za-z]){4})[A-Za-z0-9]+[!?#*$%&+]*")


def _is_password_value(value: str, made_up: bool = True) -> bool:
    """A value after a password word: random-looking, or (``made_up``: right after "is", ":"
    or "with") letters and digits made up by hand.

    Not an e-mail address, an id (digits alone read as one, as in hex), a percent-encoded
    piece or a URL; a closing "!" or "?" belongs to the sentence, so ``8302917465!`` is the
    number alone.
    """
    value = value.rstrip("!?")
    if value.lower().removesuffix("'s") in _WHERE_SECRETS_LIVE or _ALGORITHM_RE().fullmatch(value):
        return False  # "the password is in 1Password", "hashed with argon2id": no password
    if _EMAIL_RE().fullmatch(value) or _OPAQUE_ID_RE().fullmatch(value):
        return False
    if ("%" in value and _PERCENT_ESCAPE_RE().search(value)) or "://" in value:
        return False
    if made_up and _MADE_UP_RE().fullmatch(value):
        return True
    return _looks_like_password(value, 8)


# Hex runs and UUIDs inside a value (v2-deps-<sha1>, build-<uuid>): identifiers, no secret.
_HEX_RUN_RE: Final = _lazy(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{7,}|[0-9A-F]{7,}"
)
_PERCENT_ESCAPE_RE: Final = _lazy(r"%[0-9A-Fa-f]{2}")


# Hex is a digest or a commit id after most words, and a UUID an id, but a key stated right
# after a word that names a secret ("The Datadog API key is 4f9a…", "HMAC key: 5f1e…"):
# Datadog, Twilio and signing secrets are hex, Heroku's API keys UUIDs. Not after "key"
# alone ("cache key: …") nor a credential word.
_HEX_SECRET_RE: Final = _lazy(
    r"[0-9a-f]{32,}|[0-9A-F]{32,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
_DIRECTLY_STATED_RE: Final = _lazy(r"[ \t]*(?:is|was|[:=]|->)[ \t]*[\"'`]?", re.IGNORECASE)
_BARE_WORDS: Final = frozenset(("key", "keys", "credential", "credentials", "creds"))


def _is_stated_hex_secret(text: str, word: str, word_end: int, start: int, value: str) -> bool:
    if word in _BARE_WORDS or not _HEX_SECRET_RE().fullmatch(value):
        return False
    stated = _DIRECTLY_STATED_RE().match(text, word_end)
    return stated is not None and stated.end() == start


def _is_secret_value(value: str) -> bool:
    """A value after a credential word that is no password word: random-looking, 16+ long."""
    if len(value) < 16 or "://" in value or _DIGIT_RE().search(value) is None:
        return False
    if _OPAQUE_ID_RE().fullmatch(value) or _SLUG_RE().fullmatch(value):
        return False
    if len(_HEX_RUN_RE().sub("", value)) < 12 or _PERCENT_ESCAPE_RE().search(value):
        return False  # an id built around a digest, or a piece of an encoded URL
    # A base64 secret may start with "/" or "+"; a path of names stays a path without it.
    return _looks_random(value.lstrip("/+"), 16)


# What may stand before a credential word in one run of letters: dbPassword, apiKey, AWSSecret.
_WORD_QUALIFIERS: Final = (
    "",
    "api",
    "access",
    "private",
    "secret",
    "signing",
    "auth",
    "db",
    "admin",
    "root",
    "user",
    "client",
    "app",
    "aws",
    "session",
    "refresh",
    "bearer",
    "master",
    "deploy",
    "bot",
    "ci",
)
_CREDENTIAL_RUNS: Final = frozenset(
    (qualifier + word + plural).encode("ascii")
    for qualifier in _WORD_QUALIFIERS
    for word in _PASSWORD_WORDS + _SECRET_WORDS + _OTHER_WORDS
    for plural in ("", "s")
)
_ALNUM_RUN_RE: Final = functools.cache(lambda: re.compile(rb"[a-z0-9]*"))
_IDENTIFIER_RUN_RE: Final = functools.cache(lambda: re.compile(rb"[a-z0-9_.\-]*"))


def _run_end(pattern: re.Pattern[bytes], haystack: bytes, position: int) -> int:
    match = pattern.match(haystack, position)
    return position if match is None else match.end()


def _credential_word(lowered: bytes, position: int, hint: bytes) -> tuple[int, str] | None:
    """Where the credential word ``hint`` at ``position`` ends, and the word, or None when the
    word is part of something else: a longer word (monkey, PasswordResetEmailSender), a run of
    base64 or a slug (a word followed by "/", "+" or "-"), a variable ($PASSWORD) or a name about a
    credential (token_url, password_hash)."""
    start = position
    while start > 0 and (97 <= lowered[start - 1] <= 122 or 48 <= lowered[start - 1] <= 57):
        start -= 1
    if start > 0 and lowered[start - 1] in b"$%@":
        return None  # a variable: $PASSWORD, %TOKEN%, @secret
    end = position + len(hint)
    if b" " in hint or b"-" in hint:
        if start != position:
            return None
    else:
        end = _run_end(_ALNUM_RUN_RE(), lowered, end)
        if lowered[start:end] not in _CREDENTIAL_RUNS:
            return None
    if lowered[end : end + 1] in (b"/", b"+", b"-"):
        return None  # inside a run of base64 (sha512-pW/bRd…) or a slug (admin-password-is-d60)
    identifier_end = _run_end(_IDENTIFIER_RUN_RE(), lowered, end)
    word = lowered[start:identifier_end].decode("ascii", "replace")
    if _DESCRIPTIVE_KEY_RE().search(word) or _NON_CREDENTIAL_KEY_RE().search(word):
        return None
    return end, word


def _find_hints(haystack: bytes, needles: tuple[bytes, ...]) -> list[tuple[int, bytes]]:
    """Every ``(position, needle)``, by position; the longer needle first at one position."""
    found: list[tuple[int, bytes]] = []
    for needle in needles:
        position = haystack.find(needle)
        while position != -1:
            found.append((position, needle))
            position = haystack.find(needle, position + 1)
    found.sort(key=lambda item: (item[0], -len(item[1])))
    return found


_DIGIT_RE: Final = _lazy(r"[0-9]")


def _plain_word(value: str, password: bool) -> bool:
    """A quick no for most words of prose, before the costly checks."""
    if value.isalpha() and (value.islower() or value[1:].islower()):
        return True  # "policy", "Rotate": one case, no digit
    return not password and (len(value) < 16 or _DIGIT_RE().search(value) is None)


# A window worth reading holds a value long enough: 16 characters for a token, 6 for a password.
_ASSIGNED_RE: Final = _lazy(r"[\w.\-]*[\"'\]]*[ \t]*(?:=|:=|=>|:(?!//))")
_LONG_VALUE_RE: Final = _lazy(r"\S{16}")
_SHORT_VALUE_RE: Final = _lazy(r"\S{6}")


_PASSWORD_HINTS: Final = frozenset(_ascii(_PASSWORD_WORDS))


def _holds_secret_value(text: str) -> bool:
    """Whether any piece of ``text`` could be a secret after a credential word: most notes
    have none, and then the words "token", "key" and "secret" need not be read one by one."""
    for _offset, piece in long_pieces(text, 16):
        value = piece.strip(_TRIM_START + _TRIM_END)
        if _CODE_CHARACTERS.isdisjoint(value) and (
            _is_secret_value(value) or _HEX_SECRET_RE().fullmatch(value)
        ):
            return True
    return False


def _scan_keyword_values(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    lowered = subject.lowered
    done = 0
    any_secret_value: bool | None = None  # is there a value worth a non-password word at all?
    for position, hint in _find_hints(lowered, _KEYWORD_HINTS):
        if position < done:
            continue
        if hint not in _PASSWORD_HINTS:
            if any_secret_value is None:
                any_secret_value = _holds_secret_value(text)
            if not any_secret_value:
                continue
        found_word = _credential_word(lowered, position, hint)
        if found_word is None:
            continue
        word_end, word = found_word
        done = word_end  # "api key" read, so not "key" again
        password = hint in _PASSWORD_HINTS or "pass" in word or "pwd" in word
        assigned = None if password else _ASSIGNED_RE().match(text, word_end)
        if assigned and b" " not in hint and (word != "key" or "=" in assigned.group()):
            continue  # token = …, "apiKey": …: the assignment rule judges these, not "Key: …"
        window = _window(text, word_end)
        sentence = _SENTENCE_END_RE().search(window)
        if sentence is not None:
            window = window[: sentence.start()]
        if (_SHORT_VALUE_RE() if password else _LONG_VALUE_RE()).search(window) is None:
            continue
        for start, value in _candidates(window, word_end):
            if _plain_word(value, password):
                continue
            if password:
                made_up = (
                    _STATED_RE().search(text, word_end, start) is not None
                    # right after the word, long enough not to be a name: "password Summer2024!"
                    or (len(value) >= 8 and not text[word_end:start].strip())
                )
                found = _is_password_value(value, made_up)
            else:
                found = _is_secret_value(value) or _is_stated_hex_secret(
                    text, word, word_end, start, value
                )
            if found:
                done = start + len(value)
                yield start, done, "password in text" if password else "secret in text"
                break


# --- a password word in a script the scanned bytes do not hold --------------------------------

# Chinese, Japanese, Korean, Cyrillic, Arabic and Hindi password words (the scanned bytes hold
# none of them),
# then a run of ASCII characters on the rest of the line ("是", "は", "는", "для VPN:" between).
# The text is scanned in NFKD, so the words and particles are written so too ("パスワード" and
# Hangul decompose).
_SCRIPT_WORDS: Final = (
    "密码 密碼 口令 パスワード 暗証番号 비밀번호 암호 пароль парол[яюеі] كلمة.المرور كلمة.السر "
    "पासवर्ड"
)
_SCRIPT_WORD_RE: Final = _lazy(
    unicodedata.normalize("NFKD", "|".join(_SCRIPT_WORDS.split())), re.IGNORECASE
)
_SCRIPT_STATED_RE: Final = _lazy(unicodedata.normalize("NFKD", r"(?:[:=是為为は는은이]|—)\s*$"))
_ASCII_RUN_RE: Final = _lazy(r"[!-~]+")


def _scan_script_passwords(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for word in _SCRIPT_WORD_RE().finditer(text):
        window = _window(text, word.end())
        sentence = _SENTENCE_END_RE().search(window)
        window = window if sentence is None else window[: sentence.start()]
        for run in _ASCII_RUN_RE().finditer(window):
            value = run.group().lstrip(_TRIM_START)
            start = word.end() + run.end() - len(value)
            value = value.rstrip(_TRIM_END)
            if len(value) < 6 or not _CODE_CHARACTERS.isdisjoint(value) or _plain_word(value, True):
                continue
            made_up = _SCRIPT_STATED_RE().search(text, word.end(), start) is not None
            if _is_password_value(value, made_up):
                yield start, start + len(value), "password in text"
                break


# --- a bare AWS secret key ---------------------------------------------------------------------

_AWS_SECRET_RE: Final = _lazy(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _is_text(value: str) -> bool:
    try:
        return binascii.a2b_base64(value).decode("ascii").isprintable()
    except (binascii.Error, UnicodeDecodeError):
        return False


def _scan_bare_aws_secrets(subject: _Subject) -> Iterator[_Span]:
    if b"aws" not in subject.lowered and not _AWS_KEY_ID_RE().search(subject.text):
        return
    for offset, piece in long_pieces(subject.text, 40):
        for match in _AWS_SECRET_RE().finditer(piece):
            value = match.group()
            # A real secret key decodes to random bytes; base64 of text is data (echo … | base64).
            if _is_aws_secret_key(value) and _shannon_entropy(value) >= 4.0 and not _is_text(value):
                yield offset + match.start(), offset + match.end(), "AWS secret access key"


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


# The END line of a key whose BEGIN line is missing: the base64 lines before it are the key.
_KEY_TAIL_RE: Final = _lazy(
    r"(?:^|(?<=\n))(?:[A-Za-z0-9+/=]{16,}(?:\\n|\r?\n))+-----END[ A-Z0-9]{0,30}PRIVATE KEY-----"
)


def _scan_key_tails(subject: _Subject) -> Iterator[_Span]:
    for match in _KEY_TAIL_RE().finditer(subject.text):
        yield match.start(), match.end(), "private key block"


# --- the private lines of a PuTTY key file --------------------------------------------------

_PUTTY_PRIVATE_RE: Final = _lazy(
    r"Private-Lines:[ \t]*[0-9]+[ \t]*\r?\n[A-Za-z0-9+/=]+(?:\r?\n[A-Za-z0-9+/=]+(?=\r?\n|$))*"
)


def _scan_putty_keys(subject: _Subject) -> Iterator[_Span]:
    for match in _PUTTY_PRIVATE_RE().finditer(subject.text):
        yield match.start(), match.end(), "private key block"


# --- a Google service-account key --------------------------------------------------------------

_SERVICE_ACCOUNT_RE: Final = _lazy(r"\"private_key(?:_id)?\"\s*:\s*\"(?P<value>[^\"]{16,})\"")


def _scan_service_accounts(subject: _Subject) -> Iterator[_Span]:
    for match in _SERVICE_ACCOUNT_RE().finditer(subject.text):
        yield match.start("value"), match.end("value"), "Google service-account key"


PROSE_RULES: Final = (
    _Rule((b"service_account",), _scan_service_accounts),
    _Rule((b"Private-Lines:",), _scan_putty_keys),
    _Rule(_KEY_BODY_HINTS, _scan_key_bodies),
    _Rule((b"PRIVATE KEY-----",), _scan_key_tails),
    _Rule((b"aws", b"akia", b"asia"), _scan_bare_aws_secrets, ignore_case=True),
    _Rule(_KEYWORD_HINTS, _scan_keyword_values, ignore_case=True),
    _Rule((b"?",), _scan_script_passwords),  # a character outside ASCII is "?" in the bytes
)
