"""The combining marks of the tokeniser: what ``\\w`` leaves out and a word keeps."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from oharness.recall.tokenize import _UNSPACED, _chunk, _clusters, char_class, combining_marks


def test_the_marks_are_every_combining_mark_of_the_bmp() -> None:
    marks = combining_marks()
    assert "\u0301" in marks and "\u093f" in marks and "\u0e31" in marks  # acute, Devanagari, Thai
    assert all(unicodedata.category(mark) in {"Mn", "Mc", "Me"} for mark in marks)
    assert "a" not in marks and "\u0915" not in marks  # letters are not marks


def test_a_class_matches_exactly_its_characters() -> None:
    chars = set(combining_marks())
    pattern = re.compile(f"[{char_class(chars)}]")
    assert {chr(code) for code in range(0x10000) if pattern.fullmatch(chr(code))} == chars
    assert char_class("cab") == "a-c" and char_class("az") == "az" and char_class("") == ""


def test_words_keep_their_marks_outside_the_unspaced_scripts() -> None:
    assert _chunk().findall("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]
    assert _chunk().findall("café naïve") == ["café", "naïve"]
    thai = "สวัสดีครับ"
    assert _chunk().findall(thai) == [thai]  # one unspaced run, paired later
    assert re.fullmatch(f"[{_UNSPACED}]+", thai)


def test_letter_clusters_match_the_regular_expression() -> None:
    marks = char_class(combining_marks())
    pattern = re.compile(f"[^{marks}][{marks}]*")
    for text in ("สวัสดีครับ", "\u0e31leading mark", "ขอบคุณมาก", "ကျေးဇူးတင်ပါတယ်", "ສະບາຍດີ", ""):
        assert _clusters(text) == pattern.findall(text)


@given(st.text(alphabet=st.characters(min_codepoint=0x0300, max_codepoint=0x17FF), max_size=40))
def test_letter_clusters_match_the_regular_expression_on_any_text(text: str) -> None:
    marks = char_class(combining_marks())
    assert _clusters(text) == re.findall(f"[^{marks}][{marks}]*", text)
