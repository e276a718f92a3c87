"""Secret detection (spec 02.2): the corpus, refusal messages, places, redaction, obfuscation.

The corpus lives in ``tests/data/secrets/``; each file documents its format at the top.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from oharness.errors import SecretError
from oharness.notes.secrets import (
    MODEL_MARKER,
    SecretFinding,
    check_no_secrets,
    find_secrets,
    redact_for_model,
    redact_for_model_in,
    redact_secrets,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "secrets"
OPEN, CLOSE = "⟦", "⟧"
MARKER = "[REDACTED]"

_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(n)|(t)|(\\))")
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff"
    "\U000e0000-\U000e0fff]"
)


def _unescape(raw: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1) or match.group(2)
        if code:
            return chr(int(code, 16))
        return "\n" if match.group(3) else "\t" if match.group(4) else "\\"

    return _ESCAPE.sub(one, raw)


def _corpus_lines(name: str) -> list[tuple[int, str]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [
        (number, line)
        for number, line in enumerate(lines, start=1)
        if line.strip() and not line.startswith("#")
    ]


@dataclass(frozen=True)
class Positive:
    kind: str
    text: str  # the case with the brackets removed
    secret: str  # what the brackets enclosed, exactly as in the text
    line: int  # line of the secret within ``text``
    before: str
    after: str

    @property
    def visible_core(self) -> str:
        """The longest run of letters and digits of the secret as a reader would see it."""
        seen = unicodedata.normalize("NFKC", _INVISIBLE.sub("", self.secret))
        runs: list[str] = re.findall(r"[A-Za-z0-9]+", seen)
        return max(runs, key=len)


def _load_positives() -> list[tuple[int, Positive]]:
    cases = []
    for number, line in _corpus_lines("positives.txt"):
        kind, _, raw = line.partition(" | ")
        text = _unescape(raw)
        assert text.count(OPEN) == 1 and text.count(CLOSE) == 1, f"positives.txt:{number}"
        before, rest = text.split(OPEN)
        secret, after = rest.split(CLOSE)
        line_number = before.count("\n") + 1
        cases.append(
            (number, Positive(kind, before + secret + after, secret, line_number, before, after))
        )
    return cases


POSITIVE_CASES = _load_positives()
NEGATIVE_TEXTS = [(number, _unescape(line)) for number, line in _corpus_lines("negatives.txt")]
POSITIVES = [
    pytest.param(case, id=f"L{number}-{case.kind.replace(' ', '_')}")
    for number, case in POSITIVE_CASES
]
NEGATIVES = [pytest.param(text, id=f"L{number}") for number, text in NEGATIVE_TEXTS]


# --- the corpus ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", POSITIVES)
def test_positive_is_detected_with_its_kind(case: Positive) -> None:
    assert [finding.kind for finding in find_secrets({"body": case.text})] == [case.kind]


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative_is_not_detected(text: str) -> None:
    assert find_secrets({"body": text}) == []
    assert redact_secrets(text) == text


@pytest.mark.parametrize("case", POSITIVES)
def test_finding_names_the_field_and_line(case: Positive) -> None:
    fields = {"summary": "Deploy notes", "tags": "ops\ndeploy", "body": "Intro.\n\n" + case.text}
    assert find_secrets(fields) == [SecretFinding(case.kind, "body", case.line + 2)]
    if "\n" not in case.text:
        fields = {"summary": "Deploy notes", "tags": "ops\n" + case.text + "\ndeploy"}
        assert find_secrets(fields) == [SecretFinding(case.kind, "tags", 2)]
        assert find_secrets({"summary": case.text}) == [SecretFinding(case.kind, "summary", 1)]


@pytest.mark.parametrize("case", POSITIVES)
def test_refusal_never_echoes_the_secret(case: Positive) -> None:
    with pytest.raises(SecretError) as caught:
        check_no_secrets({"summary": "Deploy notes", "body": case.text})
    error = caught.value
    where = SecretFinding(case.kind, "body", case.line).describe()
    assert error.message.startswith(f"refused: this looks like a credential ({where}).")
    exposed = [error.message, str(error), repr(error.to_dict())]
    exposed += [finding.describe() for finding in find_secrets({"body": case.text})]
    for text in exposed:
        assert case.secret not in text
        assert case.visible_core not in text


@pytest.mark.parametrize("case", POSITIVES)
def test_redaction_replaces_exactly_the_secret(case: Positive) -> None:
    redacted = redact_secrets(case.text)
    assert redacted == case.before + MARKER + case.after
    assert find_secrets({"body": redacted}) == []


def test_corpus_is_broad() -> None:
    kinds = {case.kind for _, case in POSITIVE_CASES}
    assert kinds >= {
        "private key block",
        "AWS access key",
        "AWS secret access key",
        "GitHub token",
        "GitLab token",
        "Slack token",
        "OpenAI/Anthropic API key",
        "Stripe key",
        "Google API key",
        "JWT",
        "Bearer token",
        "URL with a password",
        "password assignment",
        "API key assignment",
        "token assignment",
    }
    texts = [case.text for _, case in POSITIVE_CASES]
    for obfuscation in ("\u200b", "\u200d", "\u2060", "\u00ad", "\u202e", "\u2066", "Ａ"):
        assert any(obfuscation in text for text in texts), repr(obfuscation)
    assert len(POSITIVE_CASES) >= 40
    assert len(NEGATIVE_TEXTS) >= 80


# --- refusal and findings -----------------------------------------------------------------------

GITHUB_TOKEN = "ghp_jYlCb1nZMJsuPzOkXQ9CKXlucKbn00ycIf1F"
PASSWORD = "2Z!50ILc%V2ruLLxO+?z"
URL_PASSWORD = "vtGw3WS^zazR"


def test_describe_uses_the_right_article() -> None:
    assert SecretFinding("GitHub token", "body", 3).describe() == "a GitHub token in body line 3"
    assert (
        SecretFinding("AWS access key", "tags", 1).describe() == "an AWS access key in tags line 1"
    )
    assert SecretFinding("HTTP Basic credential", "body", 2).describe().startswith("an HTTP")


def test_refusal_message_and_details() -> None:
    with pytest.raises(SecretError) as caught:
        check_no_secrets({"summary": "CI", "body": f"one\ntwo\nexport GITHUB_TOKEN={GITHUB_TOKEN}"})
    error = caught.value
    assert error.message == (
        "refused: this looks like a credential (a GitHub token in body line 3). Notes are plain "
        "files that may be synced; keep secrets in a password manager or environment variables "
        "and describe where they live instead."
    )
    assert error.to_dict() == {
        "code": "secret",
        "message": error.message,
        "field": "body",
        "line": 3,
        "kind": "GitHub token",
        "findings": [{"kind": "GitHub token", "field": "body", "line": 3}],
    }


def test_refusal_counts_the_other_findings() -> None:
    with pytest.raises(SecretError, match=r"\(a GitHub token in summary line 1, and 2 more\)"):
        check_no_secrets(
            {
                "summary": f"token {GITHUB_TOKEN}",
                "tags": "ops",
                "body": f"DB_PASSWORD={PASSWORD}\n\nhttps://app:{URL_PASSWORD}@db.acme-corp.io/x",
            }
        )


def test_clean_note_passes() -> None:
    check_no_secrets({"summary": "Pricing cards", "tags": "design\nui", "body": "Use fills."})
    check_no_secrets({"summary": "", "tags": "", "body": ""})


def test_findings_are_ordered_by_field_then_line() -> None:
    fields = {
        "summary": "ok",
        "body": f"x\nDB_PASSWORD={PASSWORD}\ny\nexport GITHUB_TOKEN={GITHUB_TOKEN}",
        "tags": f"ops\n{GITHUB_TOKEN}",
    }
    assert find_secrets(fields) == [
        SecretFinding("password assignment", "body", 2),
        SecretFinding("GitHub token", "body", 4),
        SecretFinding("GitHub token", "tags", 2),
    ]


def test_a_kind_seen_twice_on_one_line_is_reported_once() -> None:
    text = f"{GITHUB_TOKEN} {GITHUB_TOKEN.replace('j', 'k')}"
    assert find_secrets({"body": text}) == [SecretFinding("GitHub token", "body", 1)]
    assert redact_secrets(text) == f"{MARKER} {MARKER}"


def test_crlf_line_endings_count_lines_like_lf() -> None:
    body = f"one\r\ntwo\r\nkey: {GITHUB_TOKEN}\r\n"
    assert find_secrets({"body": body}) == [SecretFinding("GitHub token", "body", 3)]


# --- redaction ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"DB_PASSWORD={PASSWORD}", f"DB_PASSWORD={MARKER}"),
        (f'{{"password": "{PASSWORD}"}}', f'{{"password": "{MARKER}"}}'),
        (
            f"postgres://app:{URL_PASSWORD}@db.acme-corp.io/shop",
            f"postgres://app:{MARKER}@db.acme-corp.io/shop",
        ),
        (f"Authorization: Bearer {GITHUB_TOKEN[4:]}", f"Authorization: Bearer {MARKER}"),
        (f"a {GITHUB_TOKEN} b\nc {GITHUB_TOKEN} d", f"a {MARKER} b\nc {MARKER} d"),
    ],
)
def test_redaction_keeps_the_surrounding_text(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected


def test_redaction_uses_the_given_marker() -> None:
    assert redact_secrets(f"t={GITHUB_TOKEN}", replacement="***") == "t=***"


def test_redaction_leaves_text_without_secrets_untouched() -> None:
    text = "密码：见保险库，不要写进笔记。Ｔｏｋｅｎ\u200bs are counted.\ufeff Café au lait."
    assert redact_secrets(text) == text


def test_redaction_maps_an_obfuscated_secret_back_onto_the_original_text() -> None:
    hidden = GITHUB_TOKEN[:10] + "\u200b" + GITHUB_TOKEN[10:]
    text = f"令牌：{hidden}（已撤销）\u200d"
    assert redact_secrets(text) == f"令牌：{MARKER}（已撤销）\u200d"


def test_redaction_keeps_combining_sequences_around_the_secret() -> None:
    # Decomposition (NFKD) and the removal of combining marks work character by character,
    # so a decomposed "é" before the token maps back and stays as it was written.
    text = f"Cafe\u0301\u200b: {GITHUB_TOKEN[:8]}\u200b{GITHUB_TOKEN[8:]}"
    assert redact_secrets(text) == f"Cafe\u0301\u200b: {MARKER}"


# --- obfuscation --------------------------------------------------------------------------------

INVISIBLES = [
    "\u200b",  # zero width space
    "\u200c",  # zero width non-joiner
    "\u200d",  # zero width joiner
    "\u2060",  # word joiner
    "\u2062",  # invisible times
    "\u2064",  # invisible plus
    "\ufeff",  # zero width no-break space / BOM
    "\u00ad",  # soft hyphen
    "\u200e",  # left-to-right mark
    "\u200f",  # right-to-left mark
    "\u202a",  # left-to-right embedding
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u2069",  # pop directional isolate
    "\u180e",  # Mongolian vowel separator
    "\u034f",  # combining grapheme joiner
    "\ufe0f",  # variation selector 16
    "\U000e0100",  # variation selector 17
    "\U000e0041",  # tag latin capital letter a
    "\u3164",  # Hangul filler
    "\u0600",  # Arabic number sign (format character)
]


@pytest.mark.parametrize("invisible", INVISIBLES, ids=lambda ch: f"U+{ord(ch):04X}")
def test_invisible_characters_do_not_hide_a_secret(invisible: str) -> None:
    for cut in (2, 4, 20):
        hidden = GITHUB_TOKEN[:cut] + invisible * 2 + GITHUB_TOKEN[cut:]
        assert find_secrets({"body": f"x {hidden} y"}) == [SecretFinding("GitHub token", "body", 1)]
        assert redact_secrets(f"x {hidden} y") == f"x {MARKER} y"
    key = "pass" + invisible + "word"
    assert find_secrets({"body": f"{key}={PASSWORD}"}) == [
        SecretFinding("password assignment", "body", 1)
    ]


def test_fullwidth_letters_do_not_hide_a_secret() -> None:
    fullwidth = "".join(chr(ord(ch) + 0xFEE0) for ch in GITHUB_TOKEN)
    assert find_secrets({"body": fullwidth}) == [SecretFinding("GitHub token", "body", 1)]
    assert redact_secrets(f"« {fullwidth} »") == f"« {MARKER} »"


@pytest.mark.parametrize(
    ("kind", "phrase"),
    [
        ("Example key", "an Example key"),
        ("Infra token", "an Infra token"),
        ("OpenAI/Anthropic API key", "an OpenAI/Anthropic API key"),
        ("npm token", "an npm token"),
        ("Slack token", "a Slack token"),
        ("URL with a password", "a URL with a password"),  # "you-are-el": a consonant sound
    ],
)
def test_describe_chooses_an_before_a_vowel_sound(kind: str, phrase: str) -> None:
    assert SecretFinding(kind, "body", 1).describe() == f"{phrase} in body line 1"


def test_refusal_counts_a_single_other_finding() -> None:
    with pytest.raises(SecretError, match=r"\(a GitHub token in summary line 1, and 1 more\)"):
        check_no_secrets({"summary": f"token {GITHUB_TOKEN}", "body": f"DB_PASSWORD={PASSWORD}"})


def test_text_for_a_model_has_credentials_marked_and_invisibles_shown() -> None:
    text = f"deploy with {GITHUB_TOKEN}\u200b done"
    assert redact_for_model(text) == "deploy with [credential removed]\\u200b done"
    assert MODEL_MARKER == "[credential removed]"


def test_a_tool_result_for_a_model_is_redacted_in_every_string() -> None:
    value = {
        "notes": [{"body": f"t={GITHUB_TOKEN}", "n": 3}, (f"{GITHUB_TOKEN}", None)],
        "summary": "clean",
    }
    assert redact_for_model_in(value) == {
        "notes": [{"body": f"t={MODEL_MARKER}", "n": 3}, [MODEL_MARKER, None]],
        "summary": "clean",
    }


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "https://app.io/cb?token=R8kT2mQ9vLp4Zt7R&next=/home",
            "https://app.io/cb?token=[REDACTED]&next=/home",
        ),
        (
            "https://app.io/cb?token=R8kT2mQ9vLp4Zt7R&a=b&c=d",
            "https://app.io/cb?token=[REDACTED]&a=b&c=d",
        ),
    ],
)
def test_a_token_in_a_query_string_ends_at_the_next_parameter(text: str, redacted: str) -> None:
    assert [finding.kind for finding in find_secrets({"body": text})] == ["token assignment"]
    assert redact_secrets(text) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "AWS_SECRET = 9dF3kLm2Qx7Rt/Vb8Nw+Yp4Zs1Hc6Ju0Ge5Ai3Ko",
        "aws_secret_access_key = 9dF3kLm2Qx7Rt/Vb8Nw+Yp4Zs1Hc6Ju0Ge5Ai3Ko",
    ],
)
def test_an_aws_secret_assigned_is_named_for_aws(text: str) -> None:
    assert [finding.kind for finding in find_secrets({"body": text})] == ["AWS secret access key"]
