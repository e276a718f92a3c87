"""Each length threshold of the credential rules, on both sides of its boundary: one character
shorter than the rule's minimum is not that kind of finding, the minimum is."""

from __future__ import annotations

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
    assert kind not in _kinds("key sk-RkTmQvLpZtRwYnBcDxFhJ here")  # no digit
