"""The key rules every object store shares (oharness.storage.validation)."""

from __future__ import annotations

import pytest

from oharness.errors import ValidationError
from oharness.storage.validation import validate_condition, validate_key, validate_prefix


@pytest.mark.parametrize(
    "key",
    [
        "manifest.json",
        "users/u-0123abc/projects/git-5f0c/memory/objects/note-1/0123abcd.md",
        "erased/teams/t1.json",
        "a.b/c..d/e...",
        "ünïcödé",
        "x" * 255,
        "/".join(["seg"] * 256),
    ],
)
def test_valid_keys_are_returned_unchanged(key: str) -> None:
    assert validate_key(key) == key


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("", "empty"),
        ("/abs", "empty segment"),
        ("a/", "empty segment"),
        ("a//b", "empty segment"),
        ("..", "starts with '.'"),
        ("a/./b", "starts with '.'"),
        (".locks/001.lock", "starts with '.'"),
        ("a\\b", "backslash"),
        ("a\x00b", "control character"),
        ("a\tb", "control character"),
        ("a\x7fb", "control character"),
        ("\udcff", "not valid Unicode"),
        ("x" * 256, "longer than 255 bytes"),
        ("é" * 128, "longer than 255 bytes"),
        ("/".join(["abcd"] * 210), "longer than 1024 bytes"),
    ],
)
def test_invalid_keys_say_why(key: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason) as raised:
        validate_key(key)
    assert "invalid object key" in raised.value.message


@pytest.mark.parametrize("prefix", ["", "users/", "users/u1", "users/u1/memory/", "a.b"])
def test_valid_prefixes(prefix: str) -> None:
    assert validate_prefix(prefix) == prefix


@pytest.mark.parametrize("prefix", ["/", "/users", "users//", "../", "users/..", "a/.b", "a\\"])
def test_invalid_prefixes(prefix: str) -> None:
    with pytest.raises(ValidationError, match="invalid object prefix"):
        validate_prefix(prefix)


def test_a_put_takes_one_condition_at_most() -> None:
    validate_condition(None, False)
    validate_condition("etag", False)
    validate_condition(None, True)
    with pytest.raises(ValidationError, match="not both"):
        validate_condition("etag", True)
    with pytest.raises(ValidationError, match="empty"):
        validate_condition("", False)
