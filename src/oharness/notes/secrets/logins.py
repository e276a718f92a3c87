"""Passwords beside a login, and values named after their credential word.

- a password after "log in … with" ("log in to the admin as root with hunter2hunter2!");
- a user and password pair ("Jenkins login: admin / S3cure!Pass2024", "guest:Xk9mQ2vLp4");
- a password on a command line (``mysql -p…``, ``sshpass -p``, ``curl -u user:…``);
- a value named right after it ("use Xk9m… as the API token", "… is the staging password");
- "pass" for password after what it opens ("the db pass is letmein123");
- two-factor recovery or backup codes ("recovery codes: 8f3k2m9x 7h2p9q4z").

The values are judged as in module ``prose``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from oharness.notes.secrets.prose import (
    _CODE_CHARACTERS,
    _TRIM_END,
    _WHERE_SECRETS_LIVE,
    _is_password_value,
    _is_secret_value,
    _trimmed,
)
from oharness.notes.secrets.rules import (
    _anchored_matches,
    _ascii,
    _find_all,
    _Rule,
    _Span,
    _Subject,
)
from oharness.notes.secrets.values import _lazy

# --- "log in … with <password>" ----------------------------------------------------------------

_LOGIN_RE: Final = _lazy(
    r"(?:log(?:ged|ging)?[ \-]?(?:in|on)(?:to)?|sign(?:ed|ing)?[ \-]?(?:in|on)(?:to)?)\b"
    r"[^\n]{0,100}?\b(?:with|using|pass(?:word)?|pw)[ \t]+"
    r"(?:(?:the[ \t]+)?(?:password|passphrase|pass|pw)[ \t]*[:=]?[ \t]*)?"
    r"(?P<value>\S+)",
    re.IGNORECASE,
)
_LOGIN_HINTS: Final = _ascii(("log", "sign"))


def _scan_login_passwords(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, _LOGIN_HINTS, _LOGIN_RE()):
        skipped, value = _trimmed(match.group("value"))
        start = match.start("value") + skipped
        if len(value) >= 8 and _is_password_value(value):
            yield start, start + len(value), "password in text"


# --- a user and password pair: "admin / S3cure!Pass2024", "guest:Xk9mQ2vLp4" ------------------

# "user / value" on a line saying it holds a login, or with a default account name as the user;
# "user:value" and "user/value" (no spaces: paths, image tags) only after a default account name
# and when the value looks generated.
_PAIR_CONTEXT_RE: Final = _lazy(
    r"\b(?:log(?:ged|ging)?[ \-]?(?:in|on)|sign(?:ed|ing)?[ \-]?(?:in|on)|creds?|credentials?"
    r"|user[ \-]?names?|basic[ \-]auth|zugangsdaten|anmeld\w*|benutzer(?:name)?|identifiants?"
    r"|utilisateur|credenziali|utente|credenciales|usuario|inloggegevens|gebruiker(?:snaam)?)\b",
    re.IGNORECASE,
)
_DEFAULT_USERS: Final = frozenset(
    (
        "admin",
        "administrator",
        "root",
        "guest",
        "elastic",
        "postgres",
        "sa",
        "sysadmin",
        "superuser",
    )
)
_PAIR_RE: Final = _lazy(
    r"(?<![\w./@:+\-])(?P<user>[A-Za-z][\w.\-]{0,31}|[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+)"
    r"(?P<separator>[ \t]+/[ \t]+|/|:)(?P<value>\S+)"
)
_PAIR_HINTS: Final = (
    b" / ",
    *(
        name.encode("ascii") + separator
        for name in sorted(_DEFAULT_USERS)
        for separator in (b":", b"/")
    ),
)


def _pair_lines(subject: _Subject) -> list[tuple[int, int]]:
    """The lines holding a hint of a pair, as ``(start, end)``: few lines of a note."""
    lowered = subject.lowered
    lines: set[tuple[int, int]] = set()
    for hint in _PAIR_HINTS:
        position = lowered.find(hint)
        while position != -1:
            start = lowered.rfind(b"\n", 0, position) + 1
            end = lowered.find(b"\n", position)
            lines.add((start, len(lowered) if end == -1 else end))
            position = lowered.find(hint, position + 1)
    return sorted(lines)


def _scan_user_password_pairs(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for line_start, line_end in _pair_lines(subject):
        line = text[line_start:line_end]
        context: bool | None = None
        for match in _PAIR_RE().finditer(line):
            default_user = match.group("user").lower() in _DEFAULT_USERS
            spaced = match.group("separator").strip() != match.group("separator")
            if not default_user:
                user = match.group("user")
                if not spaced or not (user[0].islower() or "@" in user):
                    continue  # a name ("Google / GitHub2"), not a user name
                if context is None:
                    context = _PAIR_CONTEXT_RE().search(line) is not None
                if not context:
                    continue
            value = match.group("value").rstrip(_TRIM_END)
            if "/" in value or len(value) < 6 or not _CODE_CHARACTERS.isdisjoint(value):
                continue
            if _is_password_value(value, made_up=spaced):
                start = line_start + match.start("value")
                yield start, start + len(value), "password in text"


# --- a password on a command line: mysql -pX, sshpass -p X, curl -u user:X, --password X -------

_COMMAND_PASSWORD_RE: Final = _lazy(
    r"(?:\b(?:mysql\w*|mariadb\w*)\b[^\n]*?[ \t]-p(?P<attached>[^\s-]\S*)"
    r"|\b(?:sshpass|login|mongo(?:sh|dump|restore)?)\b[^\n]*?[ \t]-p[ \t]+(?P<p>\S+)"
    r"|\bredis-cli\b[^\n]*?[ \t]-a[ \t]+(?P<a>\S+)"
    r"|\bldap\w+\b[^\n]*?[ \t]-w[ \t]+(?P<w>\S+)"
    r"|\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t]*[^\s:]+:(?P<u>\S+)"
    r"|(?<![\w\-])--pass(?:word|wd)?[ \t]+(?P<long>\S+))",
    re.IGNORECASE,
)
_COMMAND_HINTS: Final = _ascii(
    ("mysql", "mariadb", "sshpass", "login", "mongo", "redis-cli", "ldap", "curl", "--pass")
)


def _scan_command_passwords(subject: _Subject) -> Iterator[_Span]:
    for match in _COMMAND_PASSWORD_RE().finditer(subject.text):
        group = match.lastgroup
        assert group is not None
        skipped, value = _trimmed(match.group(group))
        if len(value) < 6 or value.startswith(("$", "%", "<", "{")):
            continue  # a variable or a template: -p"$DB_PASSWORD", --password <pw>
        if _is_password_value(value):
            start = match.start(group) + skipped
            yield start, start + len(value), "password on a command line"


# --- a value named after it: "use Xk9m… as the API token", "Xk9m… is the staging password" -----

# After "as", "is" or "was": up to three words, then a credential word.
_NAMED_AFTER_RE: Final = _lazy(
    r"[ \t]+(?:as|is|was)[ \t]+(?:(?:the|our|my|your|a|an)[ \t]+)?(?:[\w\-]+[ \t]+){0,3}?"
    r"(?P<word>passwords?|passphrase|pwd|tokens?|secrets?|api[ \t\-]?keys?|access[ \t]+keys?"
    r"|credentials?)\b",
    re.IGNORECASE,
)
_NAMED_HINTS: Final = (b" as ", b" is ", b" was ")


def _scan_named_after(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for position in _find_all(subject.lowered, _NAMED_HINTS):
        match = _NAMED_AFTER_RE().match(text, position)
        if match is None:
            continue
        line_start = text.rfind("\n", 0, position) + 1
        before = text[line_start:position].rsplit(None, 1)
        if not before:
            continue
        skipped, value = _trimmed(before[-1])
        if len(value) < 8 or not _CODE_CHARACTERS.isdisjoint(value):
            continue
        password = match.group("word").lower().startswith(("pass", "pwd"))
        if _is_password_value(value, made_up=False) if password else _is_secret_value(value):
            start = position - len(before[-1]) + skipped
            yield start, start + len(value), "password in text" if password else "secret in text"


# --- "the db pass is letmein123": "pass" short for password, after what it opens --------------

# Only after one of these words: "the tests pass", "a second pass: 2x faster" say no password.
_PASS_OPENS: Final = frozenset(
    (
        *("db", "database", "wifi", "wi-fi", "admin", "root", "vpn", "ssh", "sudo", "mysql"),
        *("postgres", "redis", "ftp", "sftp", "smtp", "mail", "email", "account", "user", "login"),
    )
)
_PASS_RE: Final = _lazy(
    r" pass(?:[ \t]+(?:is|was)[ \t]+|[ \t]*[:=][ \t]*)(?P<value>\S+)", re.IGNORECASE
)
_PASS_HINTS: Final = (b" pass",)


def _scan_short_pass(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, _PASS_HINTS, _PASS_RE()):
        before = text[text.rfind("\n", 0, match.start()) + 1 : match.start()].rsplit(None, 1)
        skipped, value = _trimmed(match.group("value"))
        opens = bool(before) and before[-1].lower() in _PASS_OPENS
        if opens and len(value) >= 6 and _is_password_value(value):
            start = match.start("value") + skipped
            yield start, start + len(value), "password in text"


# --- "recovery codes: 8f3k2m9x 7h2p9q4z": a second factor's one-time codes -------------------

_CODES_RE: Final = _lazy(
    r"(?:recovery|backup|2fa|mfa|otp)[ \t]+codes?\b[^\n:=]{0,40}?(?:[:=]|\b(?:are|is)\b)"
    r"(?P<codes>[^\n]*)",
    re.IGNORECASE,
)
# A code: digits among 8 or more letters and digits, in groups joined by "-" (8f3k-2m9x); a
# password manager's name ("see 1Password") says where the codes are.
_CODE_RE: Final = _lazy(
    r"(?<![\w\-])(?=[\w\-]*\d)[A-Za-z0-9]{4,12}(?:-[A-Za-z0-9]{3,12})*(?![\w\-])"
)
_CODES_HINTS: Final = _ascii(("recovery", "backup", "2fa", "mfa", "otp"))


def _scan_recovery_codes(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, _CODES_HINTS, _CODES_RE()):
        for code in _CODE_RE().finditer(match.group("codes")):
            value = code.group()
            digits = sum(character.isdigit() for character in value)
            if value.lower() in _WHERE_SECRETS_LIVE or digits < 2:
                continue
            if len(value.replace("-", "")) >= 8:
                start = match.start("codes") + code.start()
                yield start, start + len(value), "recovery code"


LOGIN_RULES: Final = (
    _Rule(_LOGIN_HINTS, _scan_login_passwords, ignore_case=True),
    _Rule(_PAIR_HINTS, _scan_user_password_pairs, ignore_case=True),
    _Rule(_COMMAND_HINTS, _scan_command_passwords, ignore_case=True),
    _Rule(_NAMED_HINTS, _scan_named_after, ignore_case=True),
    _Rule(_PASS_HINTS, _scan_short_pass, ignore_case=True),
    _Rule(_CODES_HINTS, _scan_recovery_codes, ignore_case=True),
)
