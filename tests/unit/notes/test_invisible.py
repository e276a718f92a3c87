"""Invisible characters (the Trojan Source trick): which are refused in summaries and tags,
which real text keeps, and how a body shows them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oharness.errors import ValidationError
from oharness.notes.ids import clean_summary, clean_tags
from oharness.notes.invisible import escape_invisible, invisible_problem

BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)]
OTHER_INVISIBLE = [
    "\u200b",  # zero-width space
    "\u2060",  # word joiner
    "\u00ad",  # soft hyphen
    "\ufeff",  # byte order mark
    "\u3164",  # Hangul filler
    "\u180e",  # Mongolian vowel separator
    "\U000e0041",  # tag letter A: text a model reads and a person does not see
    "\u2028",  # line separator: a second line in a one-line summary
]


@pytest.mark.parametrize("char", BIDI + OTHER_INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
def test_a_summary_with_an_invisible_character_is_refused_naming_it(char: str) -> None:
    with pytest.raises(ValidationError) as raised:
        clean_summary(f"Pay invoice {char}1234 now")
    message = str(raised.value)
    assert raised.value.details["field"] == "summary"
    assert f"U+{ord(char):04X}" in message and "column 13" in message
    assert "remove it" in message and char not in message
    assert "\n" not in message


@pytest.mark.parametrize("char", BIDI[:3] + OTHER_INVISIBLE[:3], ids=lambda c: f"U+{ord(c):04X}")
def test_a_tag_with_an_invisible_character_is_refused(char: str) -> None:
    with pytest.raises(ValidationError) as raised:
        clean_tags(f"deploy, ops{char}")
    assert raised.value.details["field"] == "tags" and f"U+{ord(char):04X}" in str(raised.value)


@pytest.mark.parametrize(
    "summary",
    [
        "Works as a 👩\u200d💻 on weekends",  # an emoji ZWJ sequence
        "Loves ❤️ and ❤️\u200d🔥",  # a variation selector, then a joiner after it
        "Press 1️⃣ to confirm",  # a keycap: the selector follows an ASCII digit
        "Visits 🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f each summer",
        "می\u200cخواهم فارسی بنویسم",  # Persian: the non-joiner inside a word
        "क्\u200dष is a conjunct",  # Devanagari with a joiner
        "渡邉\U000e0100 is the family name",  # an ideographic variation selector
        "Café, naïve, Größe, 部署流程",
    ],
)
def test_real_text_that_needs_joiners_and_selectors_is_kept(summary: str) -> None:
    assert invisible_problem(summary) is None
    assert clean_summary(summary) == summary
    assert escape_invisible(summary) == summary


@pytest.mark.parametrize(
    "summary",
    [
        "de\u200dploy on Tuesdays",  # a joiner between ASCII letters hides nothing but itself
        "\u200dLeading joiner",
        "Two selectors ❤\ufe0f\ufe0f in a row",  # a run of selectors carries hidden bytes
        "Flag without its cancel tag 🏴\U000e0067\U000e0062",
        "Stray tag \U000e0067\U000e007f",
        "A space then a selector \ufe0f",
    ],
)
def test_joiners_selectors_and_tags_out_of_place_are_refused(summary: str) -> None:
    assert invisible_problem(summary) is not None
    with pytest.raises(ValidationError):
        clean_summary(summary)


def test_a_selector_left_alone_by_splitting_the_tags_is_refused() -> None:
    assert clean_tags("❤\ufe0f, ops") == ("❤\ufe0f", "ops")
    with pytest.raises(ValidationError):
        clean_tags("ops,\ufe0f")  # after the comma it would be a tag of its own


def test_a_body_shows_each_invisible_character_as_an_escape() -> None:
    body = "access = 'user\u202e \u2066// admin\u2069 \u2066'\nzero\u200bwidth 👩\u200d💻\n"
    shown = escape_invisible(body)
    assert shown == (
        "access = 'user\\u202e \\u2066// admin\\u2069 \\u2066'\nzero\\u200bwidth 👩\u200d💻\n"
    )
    assert escape_invisible("tag \U000e0041 smuggled") == "tag \\U000e0041 smuggled"


@given(st.text())
def test_escaped_text_holds_no_invisible_character(text: str) -> None:
    shown = escape_invisible(text)
    assert invisible_problem(shown) is None
    assert escape_invisible(shown) == shown
