"""The precomputed combining-mark classes of the tokeniser match unicodedata."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oharness.recall import marks
from oharness.recall.marks import MARK_CLASSES, expand_class, mark_classes, scan_marks


def test_the_table_holds_the_running_pythons_unicode_version() -> None:
    version = unicodedata.unidata_version
    assert version in MARK_CLASSES, (
        f"no combining-mark classes for Unicode {version}: run 'python -m oharness.recall.marks' "
        "with this Python and add its entry to MARK_CLASSES"
    )


def test_the_table_equals_a_scan_of_unicodedata() -> None:
    expected = (scan_marks(unspaced=False), scan_marks(unspaced=True))
    assert mark_classes() == expected


def test_an_unknown_unicode_version_is_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marks, "MARK_CLASSES", {})
    assert mark_classes() == (scan_marks(unspaced=False), scan_marks(unspaced=True))


def test_the_unspaced_scripts_marks_are_only_in_the_second_class() -> None:
    outside, everything = mark_classes()
    thai_mark = "\u0e31"  # THAI CHARACTER MAI HAN-AKAT, a combining mark
    assert unicodedata.category(thai_mark) == "Mn"
    assert not re.fullmatch(f"[{outside}]", thai_mark)
    assert re.fullmatch(f"[{everything}]", thai_mark)
    assert re.fullmatch(f"[{outside}]", "\u093f")  # DEVANAGARI VOWEL SIGN I


def test_the_generator_prints_an_entry_that_reads_back_as_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oharness.recall.marks"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.isascii()
    entry = eval("{" + done.stdout + "}")  # our own generator's output
    assert entry == {unicodedata.unidata_version: mark_classes()}


def test_a_class_expands_to_exactly_the_characters_it_matches() -> None:
    for body in mark_classes():
        chars = set(expand_class(body))
        matching = {chr(code) for code in range(0x10000) if re.fullmatch(f"[{body}]", chr(code))}
        assert chars == matching


def test_letter_clusters_match_the_regular_expression() -> None:
    from oharness.recall.tokenize import _clusters

    pattern = re.compile(f"[^{mark_classes()[1]}][{mark_classes()[1]}]*")
    for text in ("สวัสดีครับ", "\u0e31leading mark", "ขอบคุณมาก", "ကျေးဇူးတင်ပါတယ်", "ສະບາຍດີ", ""):
        assert _clusters(text) == pattern.findall(text)


@given(st.text(alphabet=st.characters(min_codepoint=0x0300, max_codepoint=0x17FF), max_size=40))
def test_letter_clusters_match_the_regular_expression_on_any_text(text: str) -> None:
    from oharness.recall.tokenize import _clusters

    marks = mark_classes()[1]
    assert _clusters(text) == re.findall(f"[^{marks}][{marks}]*", text)
