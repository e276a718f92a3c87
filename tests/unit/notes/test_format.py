"""The note file format and content hash (spec 01.1, 01.2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oharness.errors import NoteFormatError
from oharness.notes.format import (
    Note,
    file_revision,
    parse_note,
    parse_note_bytes,
    serialise_note,
    serialise_note_bytes,
)

VECTORS = Path(__file__).resolve().parents[4] / "shared" / "spec" / "vectors" / "hash.json"
_LOCAL_VECTORS = Path(__file__).resolve().parents[2] / "data" / "hash_vectors.json"


def _vector_cases() -> list[dict[str, object]]:
    path = VECTORS if VECTORS.is_file() else _LOCAL_VECTORS
    cases: list[dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))["cases"]
    return cases


@pytest.mark.parametrize("case", _vector_cases(), ids=lambda case: str(case["name"]))
def test_every_hash_vector_is_reproduced(case: dict[str, object]) -> None:
    text = case["file"]
    expect = case["expect"]
    assert isinstance(text, str) and isinstance(expect, dict)
    note = parse_note(text)
    assert note.id == expect["id"]
    assert note.summary == expect["summary"]
    assert note.type == expect["type"]
    assert list(note.tags) == expect["tags"]
    assert note.body == expect["body"]
    assert note.content_hash == expect["hash"]
    assert note.content_hash_without_id == expect["hashWithoutId"]
    assert file_revision(text.encode("utf-8")) == expect["rev"]
    again = parse_note(serialise_note(note))
    assert again == note
    assert again.content_hash == expect["hash"]


def test_untyped_hash_does_not_include_a_type_key() -> None:
    typed = Note("a-1", "Summary", "Body\n", ("x",), "project")
    untyped = typed.with_changes(type=None)
    assert typed.content_hash != untyped.content_hash
    # The pre-types formula: id, summary, tags, body only.
    import hashlib

    canonical = json.dumps(
        {"body": "Body\n", "id": "a-1", "summary": "Summary", "tags": ["x"]},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert untyped.content_hash == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def test_times_and_unknown_keys_are_not_hashed() -> None:
    note = Note("a-1", "Summary", "Body\n", (), None, 1, 2, {"source": "x"})
    assert note.content_hash == note.with_changes(created_at=5, updated_at=9, extra={}).content_hash


def test_serialise_writes_known_keys_in_order_then_unknown_ones() -> None:
    text = (
        '---\n{"zeta":1,"updatedAt":3,"tags":["a"],"summary":"S","id":"n-1",'
        '"alpha":{"x":[1,2]},"createdAt":2,"type":"user"}\n---\nbody\n'
    )
    out = serialise_note(parse_note(text))
    head = out.split("\n")[1]
    assert head == (
        '{"id":"n-1","summary":"S","type":"user","tags":["a"],"createdAt":2,"updatedAt":3,'
        '"zeta":1,"alpha":{"x":[1,2]}}'
    )
    assert out.endswith("---\nbody\n")


def test_type_key_is_omitted_when_absent_and_non_ascii_is_not_escaped() -> None:
    out = serialise_note(Note("n-1", "部署", "本文\n", (), None, 1, 1))
    assert '"type"' not in out
    assert "部署" in out


def test_crlf_files_are_read_and_body_normalised() -> None:
    note = parse_note('---\r\n{"id":"n-1","summary":"S"}\r\n---\r\nline 1\r\nline 2\r\n')
    assert note.body == "line 1\nline 2\n"
    assert note.tags == ()


def test_body_may_contain_delimiter_lines() -> None:
    note = Note("n-1", "S", "before\n---\nafter\n---\n", (), None, 1, 1)
    assert parse_note(serialise_note(note)) == note


def test_empty_body_and_closing_line_at_end_of_file() -> None:
    assert parse_note('---\n{"id":"n-1","summary":"S"}\n---').body == ""
    assert parse_note('---\n{"id":"n-1","summary":"S"}\n---\n').body == ""


def test_missing_times_fall_back_to_the_default() -> None:
    note = parse_note('---\n{"id":"n-1","summary":"S","createdAt":"x"}\n---\nb', default_time=42)
    assert note.created_at == 42 and note.updated_at == 42


@pytest.mark.parametrize(
    ("text", "reason", "message"),
    [
        ("no frontmatter at all", "no_frontmatter", "the file does not start with a '---' line"),
        (
            "---\n{not json}\n---\nbody",
            "invalid_json",
            # The line counts the file's lines: the JSON starts on line 2.
            "the frontmatter is not valid JSON "
            "(Expecting property name enclosed in double quotes at line 2)",
        ),
        (
            # A blank line before the closing '---' is a frontmatter, not a missing one.
            "---\n\n---\nbody",
            "invalid_json",
            "the frontmatter is not valid JSON (Expecting value at line 2)",
        ),
        (
            '---\n{"id": "a", "summary": "cut\n---\nbody',
            "invalid_json",
            "the frontmatter is not valid JSON (Unterminated string starting at line 2)",
        ),
        (
            "---\ntitle: Deploys\ntags: [ops]\n---\nbody",
            "invalid_json",
            "the frontmatter is YAML (as Obsidian and other tools write it), not JSON",
        ),
        ("---\n[1, 2]\n---\nbody", "not_an_object", "the frontmatter is not a JSON object"),
        (
            '---\n{"id":"n-1","summary":"S"}\nbody without closing',
            "unclosed_frontmatter",
            "the frontmatter is not closed by a '---' line",
        ),
        (
            '---\n{"summary":"S"}\n---\nbody',
            "invalid_id",
            "the frontmatter id null is missing or invalid",
        ),
        (
            '---\n{"id":"../etc","summary":"S"}\n---\nbody',
            "invalid_id",
            'the frontmatter id "../etc" is missing or invalid',
        ),
        (
            '---\n{"id":"é","summary":"S"}\n---\nbody',
            "invalid_id",
            'the frontmatter id "é" is missing or invalid',  # shown as written, not escaped
        ),
        (
            '---\n{"id":"n-1","summary":""}\n---\nbody',
            "invalid_summary",
            "the summary is missing, empty or spans several lines",
        ),
        (
            '---\n{"id":"n-1","summary":"a\\nb"}\n---\nbody',
            "invalid_summary",
            "the summary is missing, empty or spans several lines",
        ),
        (
            '---\n{"id":"n-1","summary":"S","tags":"a"}\n---\nbody',
            "invalid_tags",
            "tags must be a list of strings",
        ),
        (
            '---\n{"id":"n-1","summary":"S","type":3}\n---\nbody',
            "invalid_type",
            "type must be a string",
        ),
        ("---\n---\nbody", "empty_frontmatter", "the frontmatter is empty"),
        (
            '---\n{"id":"n-1","summary":"bell \\u0007"}\n---\nbody',
            "invalid_characters",
            "the frontmatter holds a control character (U+0007) at line 1, column 6",
        ),
        (
            '---\n{"id":"n-1","summary":"S","tags":["a\\u001b"]}\n---\nb',
            "invalid_characters",
            "the frontmatter holds a control character (U+001B) at line 1, column 2",
        ),
        (
            '---\n{"id":"n-1","summary":"lone \\ud800"}\n---\nbody',
            "invalid_characters",
            "the frontmatter holds an unpaired surrogate (U+D800) at line 1, column 6",
        ),
        (
            '---\n{"id":"n-1","summary":"S","x":["\\udfff"]}\n---\nbody',
            "invalid_characters",
            "the frontmatter holds an unpaired surrogate (a \\ud800-style escape, left by text "
            "cut inside an emoji); remove it",
        ),
        (
            '---\n{"id":"n-1","summary":"S"}\n---\na NUL \x00 here',
            "invalid_characters",
            "the body holds a control character (U+0000) at line 1, column 7",
        ),
        (
            '---\n{"id":"n-1","summary":"S"}\n---\nESC \x1b[2J',
            "invalid_characters",
            "the body holds a control character (U+001B) at line 1, column 5",
        ),
    ],
)
def test_malformed_files_are_refused_with_a_reason_and_a_message(
    text: str, reason: str, message: str
) -> None:
    with pytest.raises(NoteFormatError) as caught:
        parse_note(text)
    assert caught.value.details["reason"] == reason
    assert str(caught.value) == message


def test_invalid_utf8_is_refused_with_the_offset_of_the_bad_byte() -> None:
    with pytest.raises(NoteFormatError) as caught:
        parse_note_bytes(b'---\n{"id":"n-1","summary":"S"}\n---\n\xff\xfe')
    assert caught.value.details["reason"] == "not_utf8"
    assert str(caught.value) == "the file is not valid UTF-8 (byte 35)"


def test_parsing_bytes_passes_the_default_time_on() -> None:
    data = b'---\n{"id":"n-1","summary":"S"}\n---\nb'
    assert parse_note_bytes(data).created_at == 0
    note = parse_note_bytes(data, default_time=42)
    assert (note.created_at, note.updated_at) == (42, 42)
    assert parse_note(data.decode()).updated_at == 0


@pytest.mark.parametrize(("value", "expected"), [(5.0, 5), (5.5, 42), (True, 42), (7, 7)])
def test_a_time_is_a_whole_number_of_milliseconds_or_the_default(
    value: object, expected: int
) -> None:
    text = f'---\n{{"id":"n-1","summary":"S","createdAt":{json.dumps(value)}}}\n---\nb'
    assert parse_note(text, default_time=42).created_at == expected


def test_the_bytes_written_are_the_text_in_utf8_and_read_back_to_the_same_note() -> None:
    note = Note(id="n-1", summary="Café ☕", body="body ✓\n", tags=("é",), type="t")
    data = serialise_note_bytes(note)
    assert data == serialise_note(note).encode("utf-8")
    assert "Café ☕".encode() in data  # not \u-escaped
    assert parse_note_bytes(data) == note


def test_a_utf8_bom_is_accepted() -> None:
    assert parse_note_bytes('\ufeff---\n{"id":"n-1","summary":"S"}\n---\nb'.encode()).id == "n-1"
