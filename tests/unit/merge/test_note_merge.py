"""Whole-note merge rules (spec 07.2)."""

from __future__ import annotations

from oharness.merge.note import merge_notes, merge_tags
from oharness.notes.format import Note

BASE = Note("n-1", "Summary", "one\ntwo\nthree\nfour\n", ("a", "b"), "project", 100, 200)


def test_fields_come_from_the_side_that_changed_them() -> None:
    ours = BASE.with_changes(summary="New summary", body="ONE\ntwo\nthree\nfour\n", created_at=90)
    theirs = BASE.with_changes(type="feedback", body="one\ntwo\nthree\nFOUR\n", updated_at=300)
    result = merge_notes(BASE, ours, theirs, now=999, max_body_bytes=1000)
    assert result.ok and result.note is not None
    note = result.note
    assert note.summary == "New summary" and note.type == "feedback"
    assert note.body == "ONE\ntwo\nthree\nFOUR\n"
    assert note.created_at == 90 and note.updated_at == 999


def test_summary_or_type_changed_differently_conflicts() -> None:
    result = merge_notes(
        BASE,
        BASE.with_changes(summary="Ours"),
        BASE.with_changes(summary="Theirs"),
        now=1,
        max_body_bytes=1000,
    )
    assert not result.ok and result.conflicts == ("summary",)
    typed = merge_notes(
        BASE,
        BASE.with_changes(type="user"),
        BASE.with_changes(type=None),
        now=1,
        max_body_bytes=1000,
    )
    assert typed.conflicts == ("type",)


def test_tags_merge_as_sets() -> None:
    assert merge_tags(("a", "b"), ("a", "b", "c"), ("b", "d")) == ("b", "c", "d")
    assert merge_tags(("a",), ("a",), ("a",)) == ("a",)
    assert merge_tags((), ("x",), ("x",)) == ("x",)


def test_body_conflict_and_size_limit() -> None:
    clash = merge_notes(
        BASE,
        BASE.with_changes(body="one\nTWO\nthree\nfour\n"),
        BASE.with_changes(body="one\n2\nthree\nfour\n"),
        now=1,
        max_body_bytes=1000,
    )
    assert clash.conflicts == ("body",) and clash.body_conflicts
    big = merge_notes(
        BASE,
        BASE.with_changes(body="x" * 30 + "\ntwo\nthree\nfour\n"),
        BASE.with_changes(body="one\ntwo\nthree\n" + "y" * 30 + "\n"),
        now=1,
        max_body_bytes=40,
    )
    assert big.conflicts == ("size",)


def test_unknown_keys_merge_key_by_key() -> None:
    base = BASE.with_changes(extra={"k": 1, "gone": 2})
    ours = base.with_changes(extra={"k": 1, "mine": 3}, body="ONE\ntwo\nthree\nfour\n")
    theirs = base.with_changes(extra={"k": 5, "gone": 2})
    result = merge_notes(base, ours, theirs, now=1, max_body_bytes=1000)
    assert result.note is not None and dict(result.note.extra) == {"k": 5, "mine": 3}


def test_the_merged_note_is_whole() -> None:
    ours = BASE.with_changes(id="n-1", tags=("a", "b", "mine"), body="ONE\ntwo\nthree\nfour\n")
    theirs = BASE.with_changes(tags=("b",), body="one\ntwo\nthree\nFOUR\n", created_at=50)
    result = merge_notes(BASE, ours, theirs, now=999, max_body_bytes=1000)
    assert result.note == Note(
        "n-1", "Summary", "ONE\ntwo\nthree\nFOUR\n", ("b", "mine"), "project", 50, 999
    )
    assert result.conflicts == () and result.body_conflicts == ()


def test_the_size_limit_is_inclusive() -> None:
    ours = BASE.with_changes(body="one\ntwo\nthree\nfour\nfive\n")  # 24 bytes
    theirs = BASE.with_changes(body="zero\none\ntwo\nthree\nfour\n")  # merged: 29 bytes
    at_limit = merge_notes(BASE, ours, theirs, now=1, max_body_bytes=29)
    assert at_limit.ok and at_limit.note is not None
    assert at_limit.note.body == "zero\none\ntwo\nthree\nfour\nfive\n"
    one_short = merge_notes(BASE, ours, theirs, now=1, max_body_bytes=28)
    assert one_short.note is None and one_short.conflicts == ("size",)


def test_the_size_limit_counts_utf8_bytes() -> None:
    ours = BASE.with_changes(body="é\ntwo\nthree\nfour\n")  # 17 characters, 18 bytes
    theirs = BASE.with_changes(body="one\ntwo\nthree\nfour\n", summary="Other")
    assert merge_notes(BASE, ours, theirs, now=1, max_body_bytes=18).ok
    assert merge_notes(BASE, ours, theirs, now=1, max_body_bytes=17).conflicts == ("size",)


def test_unknown_keys_added_or_removed_by_theirs_follow_theirs() -> None:
    base = BASE.with_changes(extra={"kept": 1, "dropped": 2})
    ours = base.with_changes(body="ONE\ntwo\nthree\nfour\n")
    theirs = base.with_changes(extra={"kept": 1, "added": None})
    result = merge_notes(base, ours, theirs, now=1, max_body_bytes=1000)
    assert result.note is not None and dict(result.note.extra) == {"kept": 1, "added": None}


def test_an_unknown_key_set_differently_on_both_sides_keeps_ours() -> None:
    ours = BASE.with_changes(extra={"k": "ours"})
    theirs = BASE.with_changes(extra={"k": "theirs"}, body="ONE\ntwo\nthree\nfour\n")
    result = merge_notes(BASE, ours, theirs, now=1, max_body_bytes=1000)
    assert result.note is not None and dict(result.note.extra) == {"k": "ours"}
