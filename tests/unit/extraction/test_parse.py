"""The model's answer is untrusted: every rule of the parser, one test each."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oharness.errors import ValidationError
from oharness.extraction import parse_answer
from oharness.extraction.parse import MAX_ANSWER_CHARS, ParsedAnswer
from oharness.memory.memory_service import UNSET

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def parse(raw: Any, **limits: int) -> ParsedAnswer:
    text = raw if isinstance(raw, (str, bytes)) else json.dumps(raw)
    return parse_answer(
        text,
        max_body_bytes=limits.get("max_body_bytes", 4096),
        max_new=limits.get("max_new", 10),
        max_updates=limits.get("max_updates", 5),
    )


def one(summary: str = "Deploys use Zephyr", body: str = "Every Tuesday.") -> dict[str, Any]:
    return {"summary": summary, "body": body}


def test_prose_and_a_code_fence_around_the_json_are_skipped() -> None:
    answer = json.dumps({"new": [one()]})
    for text in (
        f"Sure! Here are the notes:\n{answer}\nHope this helps.",
        f"```json\n{answer}\n```",
        f"I thought about {{this}} first. {answer} and {{that}} after.",
    ):
        parsed = parse(text)
        assert [entry.summary for entry in parsed.new] == ["Deploys use Zephyr"], text


def test_an_answer_without_the_object_is_an_error_that_names_the_fix() -> None:
    for text in ("no notes today", '{"notes": []}', "[1, 2]", "{broken json", ""):
        with pytest.raises(ValidationError, match='"new" or "updates"'):
            parse(text)


def test_unknown_keys_are_ignored_and_the_entry_kept() -> None:
    parsed = parse(
        {"new": [{**one(), "confidence": 0.9}], "updates": [], "thoughts": "long reasoning"}
    )
    assert len(parsed.new) == 1
    assert parsed.ignored_keys == {"thoughts", "new 1.confidence"}


def test_an_invalid_entry_is_dropped_with_its_reason_and_the_valid_ones_kept() -> None:
    parsed = parse(
        {
            "new": [
                {"summary": 42, "body": "x"},
                {"summary": "No body"},
                {**one("Tagged wrongly"), "tags": {"a": 1}},
                {**one("Typed wrongly"), "type": "diary"},
                {**one("Scoped wrongly"), "scope": "team"},
                "just a string",
                one("The good one"),
            ],
            "updates": [{"id": "bad id!", "body": "x"}, {"id": "ok-1"}],
        }
    )
    assert [entry.summary for entry in parsed.new] == ["The good one"]
    reasons = {item.entry: item.reason for item in parsed.dropped}
    assert "summary is a int" in reasons["new 1"]
    assert "body is missing" in reasons["new 2"]
    assert "tags must be a list of strings" in reasons["new 3"]
    assert "unknown note type 'diary'" in reasons["new 4"]
    assert "unknown scope 'team'" in reasons["new 5"]
    assert "not a JSON object" in reasons["new 6"]
    assert "invalid note id" in reasons["update 1"]
    assert "body is missing" in reasons["update 2"]
    assert parsed.dropped_new[3] == "Tagged wrongly"  # its [[new:3]] links become plain text


def test_an_over_long_summary_or_one_with_a_line_break_is_dropped() -> None:
    parsed = parse({"new": [one("x" * 201), one("two\nlines"), one("y" * 200)]})
    assert [len(entry.summary) for entry in parsed.new] == [200]
    assert "at most 200" in parsed.dropped[0].reason
    assert "line break" in parsed.dropped[1].reason


def test_a_body_over_the_limit_is_dropped() -> None:
    parsed = parse({"new": [one(body="x" * 5000), one("Small")]}, max_body_bytes=4096)
    assert [entry.summary for entry in parsed.new] == ["Small"]
    assert "maxNoteBytes" in parsed.dropped[0].reason


def test_new_and_updates_that_are_not_lists_are_left_out_whole() -> None:
    parsed = parse({"new": {"summary": "x"}, "updates": [{"id": "a-1", "body": "b"}]})
    assert parsed.new == [] and [update.id for update in parsed.updates] == ["a-1"]
    assert parsed.dropped[0].entry == "new"


def test_a_thousand_new_notes_keep_only_the_per_pass_limit() -> None:
    parsed = parse({"new": [one(f"Note number {n}") for n in range(1000)]}, max_new=10)
    assert len(parsed.new) == 10
    assert len(parsed.dropped) == 990
    assert all("limit of 10 new notes" in item.reason for item in parsed.dropped)


def test_updates_are_limited_per_pass_too() -> None:
    parsed = parse({"updates": [{"id": f"n-{n}", "body": "b"} for n in range(8)]}, max_updates=5)
    assert len(parsed.updates) == 5 and len(parsed.dropped) == 3


def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    raw = b'{"new": [{"summary": "Caf\xe9 opens at nine", "body": "Bad \xff\xfe bytes."}]}'
    [entry] = parse(raw).new
    assert entry.summary == "Caf\ufffd opens at nine"
    assert "\ufffd" in entry.body
    entry.body.encode("utf-8")  # writable as a file


def test_lone_surrogates_and_control_characters_are_cleaned() -> None:
    raw = '{"new": [{"summary": "Odd \\ud800 text\\u0007", "body": "NUL \\u0000 here\\tand tab"}]}'
    [entry] = parse(raw).new
    assert entry.summary == "Odd \ufffd text"
    assert entry.body == "NUL  here\tand tab\n"


def test_invisible_characters_leave_a_models_summary_and_tags_the_body_keeps_them() -> None:
    summary = "Approve \u202einvoices\u200b on Fridays"
    entry = {"summary": summary, "body": "Tricky \u2066text\u2069.", "tags": ["ops\u200b"]}
    update = {"id": "billing-1", "summary": "Pay \u2067now", "body": "Soon."}
    parsed = parse({"new": [entry], "updates": [update]})
    [new] = parsed.new
    assert new.summary == "Approve invoices on Fridays" and new.tags == ("ops",)
    assert new.body == "Tricky \u2066text\u2069.\n"
    assert parsed.updates[0].summary == "Pay now" and parsed.dropped == []


def test_a_credential_is_redacted_never_a_reason_to_refuse_the_batch() -> None:
    parsed = parse(
        {
            "new": [
                one("Token for CI", f"The CI token is {GITHUB_TOKEN} for now."),
                {**one("Tagged with a secret"), "tags": ["ci", GITHUB_TOKEN]},
                one(f"Summary with {GITHUB_TOKEN}"),
            ],
            "updates": [{"id": "ci-1", "body": f"token {GITHUB_TOKEN}"}],
        }
    )
    assert len(parsed.new) == 3 and len(parsed.updates) == 1
    text = json.dumps([vars(entry) for entry in parsed.new], default=str)
    assert GITHUB_TOKEN not in text and GITHUB_TOKEN not in parsed.updates[0].body
    assert "[REDACTED]" in parsed.new[0].body and "[REDACTED]" in parsed.new[2].summary
    assert parsed.new[1].tags == ("ci",)
    assert all(entry.redacted for entry in parsed.new) and parsed.updates[0].redacted


def test_an_update_keeps_what_it_leaves_out() -> None:
    parsed = parse(
        {
            "updates": [
                {"id": "a-1", "body": "new"},
                {"id": "b-1", "body": "x", "type": None, "tags": []},
            ]
        }
    )
    first, second = parsed.updates
    assert first.summary is None and first.tags is UNSET and first.type is UNSET
    assert second.type is None and second.tags == ()


def test_an_absurdly_long_answer_is_refused_whole() -> None:
    with pytest.raises(ValidationError, match="characters"):
        parse("x" * (MAX_ANSWER_CHARS + 1))


def test_tags_over_the_limits_of_a_write_are_left_out_and_the_note_kept() -> None:
    tags = ["x" * 65, *(f"tag{n}" for n in range(40))]
    (entry,) = parse({"new": [{**one(), "tags": tags}]}).new
    assert entry.tags == tuple(f"tag{n}" for n in range(32))
