"""The diff3-style line merge (spec 07.2)."""

from __future__ import annotations

from oharness.merge.text import ConflictRegion, TextMerge, merge_text, merge_text_marked

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


def test_an_unchanged_side_gives_an_ok_merge_of_the_other_side() -> None:
    assert merge_text("a", "a", "b") == TextMerge(True, "b")
    assert merge_text("a", "b", "a") == TextMerge(True, "b")


def test_a_conflict_is_not_ok_and_has_no_text() -> None:
    result = merge_text(BASE, BASE.replace("two", "TWO"), BASE.replace("two", "2"))
    region = ConflictRegion(2, ("two",), ("TWO",), ("2",))
    assert result == TextMerge(False, None, (region,))


def test_a_merge_keeps_a_missing_final_newline() -> None:
    assert merge_text("a\nb\nc", "A\nb\nc", "a\nb\nC").text == "A\nb\nC"


def test_the_side_that_dropped_the_final_newline_wins_over_line_edits() -> None:
    assert merge_text("a\nb\nc\n", "A\nb\nc\n", "a\nb\nC").text == "A\nb\nC"
    assert merge_text("a\nb\nc\n", "A\nb\nc", "a\nb\nC\n").text == "A\nb\nC"


def test_text_added_to_an_empty_base_keeps_the_final_newline_either_side_added() -> None:
    assert merge_text("", "x\n", "x").text == "x\n"
    assert merge_text("", "x", "x\n").text == "x\n"


def test_a_last_line_without_newline_is_a_line() -> None:
    result = merge_text("one\ntwo", "zero\none\ntwo", "one\ntwo\nthree\n")
    assert result.text == "zero\none\ntwo\nthree\n"


def test_repeated_lines_in_a_long_text_still_align() -> None:
    # difflib's junk heuristic (autojunk) would treat a line repeated in more than 1 % of a
    # 200+ line text as noise and align nothing: both edits would become one conflict.
    base = "- [ ] check\n" * 250
    ours = "# Checklist\n" + base
    theirs = base + "- [x] done\n"
    assert merge_text(base, ours, theirs).text == ours + "- [x] done\n"


def test_a_marked_merge_writes_each_conflict_between_labelled_markers() -> None:
    result = merge_text_marked(
        "one\ntwo\nthree\n", "one\nTWO\nthree\n", "one\n2\nthree\n", ("mine", "server")
    )
    assert result == TextMerge(
        False,
        "one\n<<<<<<< mine\nTWO\n=======\n2\n>>>>>>> server\nthree\n",
        (ConflictRegion(2, ("two",), ("TWO",), ("2",)),),
    )


def test_a_marked_merge_ends_with_a_newline_after_the_closing_marker() -> None:
    result = merge_text_marked("one\ntwo", "one\nTWO", "one\ntwo\nthree", ("mine", "server"))
    assert not result.ok
    assert result.text == "one\n<<<<<<< mine\nTWO\n=======\ntwo\nthree\n>>>>>>> server\n"


def test_a_marked_merge_without_conflict_is_the_plain_merge() -> None:
    merged = merge_text_marked(
        BASE, BASE.replace("one", "ONE"), BASE.replace("five", "5"), ("a", "b")
    )
    assert merged == TextMerge(True, "ONE\ntwo\nthree\nfour\n5\n")
