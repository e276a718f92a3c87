"""The merge laws applied to the line merge itself (``merge_lines``), not only to
``merge_text``'s early returns: an unchanged side takes the other, identical changes merge to
themselves, the merge is symmetric, and the same edit made on both sides combines with a
separate edit made on one side only."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from oharness.merge.text import merge_lines, merge_text

#: Few distinct lines, so that the generated sides share lines with the base and each other.
lines = st.lists(st.sampled_from(["a", "b", "c", "d", ""]), max_size=8)


@given(lines, lines)
def test_an_unchanged_side_takes_the_other(base: list[str], other: list[str]) -> None:
    assert merge_lines(base, base, other) == (other, [])
    assert merge_lines(base, other, base) == (other, [])


@given(lines, lines)
def test_identical_changes_merge_to_themselves(base: list[str], both: list[str]) -> None:
    assert merge_lines(base, both, both) == (both, [])


@given(lines, lines, lines)
def test_the_line_merge_is_symmetric(base: list[str], ours: list[str], theirs: list[str]) -> None:
    forward, forward_conflicts = merge_lines(base, ours, theirs)
    backward, backward_conflicts = merge_lines(base, theirs, ours)
    assert (forward is None) == (backward is None)
    assert len(forward_conflicts) == len(backward_conflicts)
    for there, back in zip(forward_conflicts, backward_conflicts, strict=True):
        assert there.base_start == back.base_start and there.base_lines == back.base_lines
        assert (there.ours_lines, there.theirs_lines) == (back.theirs_lines, back.ours_lines)


@st.composite
def shared_and_separate_edits(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    """A base of unique lines; both sides make the same edit at one place, ours also edits a
    place at least one untouched line away. Returns (base, ours, theirs)."""
    size = draw(st.integers(min_value=3, max_value=16))
    base = [f"line {index}" for index in range(size)]
    cut = draw(st.integers(min_value=1, max_value=size - 2))  # base[cut] stays untouched
    first = draw(st.booleans())  # which side of the cut the shared edit is on
    low, high = (0, cut) if first else (cut + 1, size)
    s_start = draw(st.integers(min_value=low, max_value=high))
    s_end = draw(st.integers(min_value=s_start, max_value=high))
    shared = draw(st.lists(st.sampled_from(["both a", "both b"]), min_size=1, max_size=3))
    low, high = (cut + 1, size) if first else (0, cut)
    o_start = draw(st.integers(min_value=low, max_value=high))
    o_end = draw(st.integers(min_value=o_start, max_value=high))
    own = draw(st.lists(st.sampled_from(["ours a", "ours b"]), min_size=1, max_size=3))

    def apply(edits: list[tuple[int, int, list[str]]]) -> list[str]:
        result = list(base)
        for start, end, new in sorted(edits, reverse=True):
            result[start:end] = new
        return result

    theirs = apply([(s_start, s_end, shared)])
    ours = apply([(s_start, s_end, shared), (o_start, o_end, own)])
    return base, ours, theirs


@given(shared_and_separate_edits())
def test_the_same_edit_in_one_place_and_a_separate_edit_elsewhere_combine(
    case: tuple[list[str], list[str], list[str]],
) -> None:
    base, ours, theirs = case
    assert merge_lines(base, ours, theirs) == (ours, [])
    assert merge_lines(base, theirs, ours) == (ours, [])
    text = merge_text("\n".join(base) + "\n", "\n".join(ours) + "\n", "\n".join(theirs) + "\n")
    assert text.ok and text.text == "\n".join(ours) + "\n"


def test_a_shared_fix_and_a_separate_addition_merge() -> None:
    base = "one\ntwo\nthree\nfour\nfive\n"
    theirs = "one\nTWO\nthree\nfour\nfive\n"
    ours = "one\nTWO\nthree\nfour\nfive\nsix\n"
    assert merge_text(base, ours, theirs).text == ours
    assert merge_text(base, theirs, ours).text == ours


def test_the_same_deletion_on_both_sides_is_not_a_conflict() -> None:
    base = ["keep", "drop", "keep too", "edit me", "end"]
    ours = ["keep", "keep too", "edited", "end"]
    theirs = ["keep", "keep too", "edit me", "end"]
    assert merge_lines(base, ours, theirs) == (ours, [])


def test_the_same_edit_next_to_different_edits_still_conflicts() -> None:
    base = ["a", "b", "c"]
    ours = ["A", "B", "c"]
    theirs = ["A", "b2", "c"]
    merged, conflicts = merge_lines(base, ours, theirs)
    assert merged is None and len(conflicts) == 1
    assert conflicts[0].base_lines == ("a", "b") and conflicts[0].base_start == 1
