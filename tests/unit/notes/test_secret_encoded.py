"""Tokens written with escapes, percent-encoding or HTML entities: found, and redacted over
exactly the encoded characters they came from, whatever is encoded before them."""

from __future__ import annotations

import pytest

from oharness.notes.secrets import SecretFinding, find_secrets, redact_secrets

TOKEN = "ghp_R8kT2mQ9vLp4Zt7RwY3nB6cDxF1hJ5sA0gUe"
MARKER = "[REDACTED]"


def _escaped(form: str, text: str) -> str:
    return "".join(form.format(ord(character)) for character in text)


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "caf\\u00e9 " + _escaped("\\u{:04x}", TOKEN[:3]) + TOKEN[3:] + " end",
            f"caf\\u00e9 {MARKER} end",
        ),
        (
            "caf\\u00e9 " + _escaped("\\x{:02x}", TOKEN[:3]) + TOKEN[3:] + " end",
            f"caf\\u00e9 {MARKER} end",
        ),
        (
            "caf\\u00e9 " + _escaped("\\u{{{:x}}}", TOKEN[:3]) + TOKEN[3:] + " end",
            f"caf\\u00e9 {MARKER} end",
        ),
        (  # past the last code point: decoded to nothing, left as written
            "x \\u{110000} " + _escaped("\\u{:04x}", TOKEN[:3]) + TOKEN[3:] + " end",
            f"x \\u{{110000}} {MARKER} end",
        ),
        (_escaped("\\u{:04x}", TOKEN), MARKER),
        ("a%20b " + _escaped("%{:02X}", TOKEN[:4]) + TOKEN[4:] + " end", f"a%20b {MARKER} end"),
        ("a&amp;b " + _escaped("&#{};", TOKEN[:3]) + TOKEN[3:] + " end", f"a&amp;b {MARKER} end"),
    ],
)
def test_an_encoded_token_is_found_and_redacted_where_it_was_written(
    text: str, redacted: str
) -> None:
    assert find_secrets({"body": text}) == [SecretFinding("GitHub token (encoded)", "body", 1)]
    assert redact_secrets(text) == redacted
