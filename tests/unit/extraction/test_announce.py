"""The session-start announcement of what capture saved: each note once."""

from __future__ import annotations

from oharness.extraction.announce import Announcement


def test_a_note_saved_by_several_passes_is_announced_and_counted_once() -> None:
    # Stop, SessionEnd and another agent's pass each named it: "saved 6 memories" for 4 notes.
    notes = [
        {"id": "rule-1a2", "scope": "project", "summary": "Rule", "action": "created"},
        {"id": "tabs-3b4", "scope": "user", "summary": "Tabs", "action": "created"},
        {"id": "rule-1a2", "scope": "project", "summary": "Rule, sharper", "action": "updated"},
        {"id": "rule-1a2", "scope": "user", "summary": "Another scope", "action": "updated"},
    ]
    text = Announcement.from_dict({"notes": notes}).text("your last session")
    assert text == (
        "saved 3 memories from your last session: Rule, sharper (rule-1a2); Tabs (user:tabs-3b4); "
        "Another scope (user:rule-1a2, updated)"
    )
