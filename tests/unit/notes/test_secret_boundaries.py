"""Each length threshold of the credential rules, on both sides of its boundary: one character
shorter than the rule's minimum is not that kind of finding, the minimum is."""

from __future__ import annotations

import base64

import pytest

from oharness.notes.secrets import find_secrets


def _kinds(text: str) -> list[str]:
    return [finding.kind for finding in find_secrets({"body": text})]


@pytest.mark.parametrize(
    ("template", "at_minimum", "one_short", "kind"),
    [
        # A URL's password: three characters and up (two is an initial or a placeholder).
        ("db: postgres://app:{}@db.internal:5432/shop", "k9x", "k9", "URL with a password"),
        # HTTP Basic: eight base64 characters and up.
        ("Authorization: Basic {}", "dXNlcjpw", "dXNlcjp", "HTTP Basic credential"),
        # Bearer: sixteen token characters and up.
        ("Authorization: Bearer {}", "k9Xq2Lm8Vb7Np4Rt", "k9Xq2Lm8Vb7Np4R", "Bearer token"),
        # A password assigned: eight characters and up; after "is", ten.
        ("password={}", "Xk9#mQ2v", "Xk9#mQ2", "password assignment"),
        ("the password is {}", "Xk9#mQ2vLp", "Xk9#mQ2vL", "password assignment"),
        # AWS access key id: AKIA and sixteen more, no fewer.
        ("key {} here", "AKIAY0CQ65ZT4WN6ISIG", "AKIAY0CQ65ZT4WN6ISI", "AWS access key"),
    ],
)
def test_a_rule_finds_its_minimum_and_not_one_character_less(
    template: str, at_minimum: str, one_short: str, kind: str
) -> None:
    assert len(one_short) == len(at_minimum) - 1
    assert kind in _kinds(template.format(at_minimum))
    assert kind not in _kinds(template.format(one_short))


def test_a_url_password_of_any_length_from_three_is_found() -> None:
    """The rule has no upper bound short of the URL: 3, 8, 11, 12, 13 and 64 characters."""
    for length in (3, 8, 11, 12, 13, 64):
        password = ("k9x" * 30)[:length]
        assert "URL with a password" in _kinds(f"postgres://app:{password}@db.internal/shop")


def test_an_openai_key_needs_twenty_random_characters_with_a_digit() -> None:
    kind = "OpenAI/Anthropic API key"
    assert _kinds("key sk-R8kT2mQ9vLp4Zt7RwY3n here") == [kind]
    assert kind not in _kinds("key sk-R8kT2mQ9vLp4Zt7RwY3 here")  # nineteen
    assert kind not in _kinds("key sk-RKtmQVlpZTrwYNbcDXfhJ here")  # random, but no digit


def _basic(credential: bytes) -> str:
    return "Authorization: Basic " + base64.b64encode(credential).decode("ascii")


@pytest.mark.parametrize(
    ("credential", "found"),
    [
        (b"deploy:Xk9mQ2vL", True),
        (b"deploy:Xk9:", True),  # the password is all after the first colon, colons too
        (b"deploy:", False),  # no password
        (b"deployXk9mQ2vL", False),  # no colon: base64 of anything, not a credential
        (b"deploy:password", False),  # a placeholder password
        (b"deploy:Xk9\x01mQ2vL", False),  # not printable
        (b"deploy:Xk9\xffmQ2vL", False),  # not ASCII
    ],
)
def test_a_basic_credential_is_user_colon_password_in_printable_ascii(
    credential: bytes, found: bool
) -> None:
    assert ("HTTP Basic credential" in _kinds(_basic(credential))) is found


def test_a_basic_credential_is_whole_base64_quads() -> None:
    """Twelve characters decode to ``user:k9Xq``; the same with excess padding is no quad."""
    assert _kinds("Authorization: Basic dXNlcjprOVhx") == ["HTTP Basic credential"]
    assert _kinds("Authorization: Basic dXNlcjprOVhx==") == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Bearer k9Xq2Lm8Vb7Np4Rt", True),  # at the very start of the text
        ("see: Bearer k9Xq2Lm8Vb7Np4Rt", True),
        ("see xBearer k9Xq2Lm8Vb7Np4Rt", False),  # glued to a word
        ("xBearer k9Xq2Lm8Vb7Np4Rt", False),
    ],
)
def test_bearer_counts_only_at_the_start_of_a_word(text: str, found: bool) -> None:
    assert ("Bearer token" in _kinds(text)) is found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("postgres://app:k9Xq2Lm8@db.internal/shop", True),
        ("postgres://app:password@db.internal/shop", False),  # the placeholder of URLs
        ("postgres://app:changeme1@db.internal/shop", False),  # a placeholder word
        # A URL skipped does not end the scan: the next one on the line is read.
        ("see https://u:k9Xq2Lm8@example.com and postgres://app:k9Xq2Lm8@db.internal", True),
        ("see postgres://app:password@db.one and postgres://app:k9Xq2Lm8@db.two", True),
    ],
)
def test_url_passwords_and_their_placeholders(text: str, found: bool) -> None:
    assert ("URL with a password" in _kinds(text)) is found


def test_an_example_aws_key_does_not_end_the_scan() -> None:
    text = "doc AKIAIOSFODNN7EXAMPLE then AKIAY0CQ65ZT4WN6ISIG"
    assert _kinds(text) == ["AWS access key"]


JWT_HEAD = "eyJhbGciOiJIUzI1NiJ9"


@pytest.mark.parametrize(
    ("payload", "signature", "found"),
    [
        ("eyJzdWIiOiIxMjM0In0", "k9Xq2Lm8Vb7Np4RtW3zY", True),
        # The signature decides: a placeholder word in the payload is payload.
        ("eyJexampleIjoiMTIzNCJ9", "k9Xq2Lm8Vb7Np4RtW3zY", True),
        ("eyJzdWIiOiIxMjM0In0", "xxxxxxxxxxxxxxxxxxxx", False),
    ],
)
def test_a_jwt_is_judged_by_its_signature(payload: str, signature: str, found: bool) -> None:
    assert ("JWT" in _kinds(f"token {JWT_HEAD}.{payload}.{signature} end")) is found
