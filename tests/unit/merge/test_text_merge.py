"""The diff3-style line merge (spec 07.2)."""

from __future__ import annotations

from oharness.merge.text import merge_text

BASE = "one\ntwo\nthree\nfour\nfive\n"


def test_edits_far_apart_combine() -> None:
    ours = BASE.replace("one", "ONE")
    theirs = BASE.replace("five", "FIVE")
    result = merge_text(BASE, ours, theirs)
    assert result.ok and result.text == "ONE\ntwo\nthree\nfour\nFIVE\n"


def test_one_unchanged_line_between_edits_merges() -> None:
    result = merge_text(BASE, BASE.replace("one", "ONE"), BASE.replace("three", "THREE"))
    assert result.text == "ONE\ntwo\nTHREE\nfour\nfive\n"


def test_same_line_conflicts() -> None:
    result = merge_text(BASE, BASE.replace("two", "2"), BASE.replace("two", "deux"))
    assert not result.ok and result.text is None
    (region,) = result.conflicts
    assert region.base_lines == ("two",) and region.base_start == 2
    assert region.ours_lines == ("2",) and region.theirs_lines == ("deux",)


def test_adjacent_lines_conflict() -> None:
    result = merge_text(BASE, BASE.replace("two", "2"), BASE.replace("three", "3"))
    assert not result.ok


def test_identical_edits_on_both_sides_merge() -> None:
    both = BASE.replace("two", "2")
    assert merge_text(BASE, both, both).text == both


def test_inserts_at_the_same_place_conflict_but_elsewhere_combine() -> None:
    assert not merge_text(BASE, "zero\n" + BASE, "minus one\n" + BASE).ok
    result = merge_text(BASE, "zero\n" + BASE, BASE + "six\n")
    assert result.text == "zero\n" + BASE + "six\n"


def test_deletes_combine_with_distant_edits() -> None:
    ours = BASE.replace("one\n", "")
    theirs = BASE.replace("five", "FIVE")
    assert merge_text(BASE, ours, theirs).text == "two\nthree\nfour\nFIVE\n"


def test_append_to_a_text_without_final_newline_is_not_a_last_line_change() -> None:
    base = "alpha\nbeta\ngamma"
    ours = "alpha\nbeta\ngamma\ndelta\n"
    theirs = "ALPHA\nbeta\ngamma"
    result = merge_text(base, ours, theirs)
    assert result.ok and result.text == "ALPHA\nbeta\ngamma\ndelta\n"


def test_appends_on_both_sides_conflict() -> None:
    assert not merge_text(BASE, BASE + "six\n", BASE + "seven\n").ok


def test_empty_base() -> None:
    assert merge_text("", "a\n", "").text == "a\n"
    assert not merge_text("", "a\n", "b\n").ok


def test_an_unchanged_side_takes_the_others_text_exactly() -> None:
    theirs = "one\nTWO\nthree"  # a different final newline is the other side's change too
    assert merge_text(BASE, BASE, theirs).text == theirs
    assert merge_text(BASE, theirs, BASE).text == theirs


def test_deleting_everything_against_a_newline_only_change_leaves_nothing() -> None:
    result = merge_text("a\n", "", "a")
    assert result.ok and result.text == ""
