"""Merge laws (spec 13.2) and 'no edit is lost when a merge succeeds'."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from oharness.merge.text import merge_text

line = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n\r"), max_size=12)
texts = st.lists(line, max_size=12).map(lambda lines: "".join(f"{item}\n" for item in lines)) | (
    st.lists(line, min_size=1, max_size=12).map("\n".join)
)


@given(texts, texts)
def test_unchanged_side_takes_the_other(base: str, other: str) -> None:
    assert merge_text(base, base, other).text == other
    assert merge_text(base, other, base).text == other


@given(texts, texts)
def test_identical_changes_merge_to_themselves(base: str, both: str) -> None:
    assert merge_text(base, both, both).text == both


@given(texts, texts, texts)
def test_merge_is_symmetric_in_success(base: str, ours: str, theirs: str) -> None:
    forward = merge_text(base, ours, theirs)
    backward = merge_text(base, theirs, ours)
    assert forward.ok == backward.ok
    if forward.ok:
        assert forward.text == backward.text


@st.composite
def separated_edits(draw: st.DrawFn) -> tuple[list[str], list[str], list[str], list[str]]:
    """A base of unique lines and two edits separated by at least one untouched line."""
    size = draw(st.integers(min_value=3, max_value=20))
    base = [f"line {index}" for index in range(size)]
    cut = draw(st.integers(min_value=1, max_value=size - 2))  # base[cut] stays untouched
    o_start = draw(st.integers(min_value=0, max_value=cut - 1))
    o_end = draw(st.integers(min_value=o_start, max_value=cut))  # replaces base[o_start:o_end]
    t_start = draw(st.integers(min_value=cut + 1, max_value=size))
    t_end = draw(st.integers(min_value=t_start, max_value=size))
    o_new = draw(st.lists(st.sampled_from(["ours a", "ours b", "ours c"]), max_size=3))
    t_new = draw(st.lists(st.sampled_from(["theirs a", "theirs b"]), max_size=3))
    if o_end - o_start == 0 and not o_new:
        o_new = ["ours inserted"]
    if t_end - t_start == 0 and not t_new:
        t_new = ["theirs inserted"]
    ours = base[:o_start] + o_new + base[o_end:]
    theirs = base[:t_start] + t_new + base[t_end:]
    expected = base[:o_start] + o_new + base[o_end:t_start] + t_new + base[t_end:]
    return base, ours, theirs, expected


@settings(max_examples=300)
@given(separated_edits())
def test_separated_edits_always_merge_and_keep_both(
    case: tuple[list[str], list[str], list[str], list[str]],
) -> None:
    base, ours, theirs, expected = case

    def text(lines: list[str]) -> str:
        return "".join(f"{item}\n" for item in lines)

    result = merge_text(text(base), text(ours), text(theirs))
    assert result.ok, case
    assert result.text == text(expected)
