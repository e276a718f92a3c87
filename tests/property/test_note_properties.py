"""Property tests of the note format (spec 13.2): round-trips, hash stability, tag cleaning."""

from __future__ import annotations

import json
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from oharness.notes.format import Note, parse_note, parse_note_bytes, serialise_note
from oharness.notes.ids import clean_tags, generate_id, is_valid_id

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,40}", fullmatch=True)
# Any unicode except surrogates (not encodable as UTF-8); summaries are one non-blank line.
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=300)
summaries = text.map(lambda s: s.replace("\n", " ").replace("\r", " ")).filter(
    lambda s: bool(s.strip())
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=6,
)
extras = st.dictionaries(
    text.filter(lambda key: key not in {"id", "summary", "type", "tags", "createdAt", "updatedAt"}),
    json_values,
    max_size=3,
)
notes = st.builds(
    Note,
    id=ids,
    summary=summaries,
    body=text.map(lambda s: s.replace("\r\n", "\n")),
    tags=st.lists(text, max_size=5).map(tuple),
    type=st.none() | st.sampled_from(["user", "feedback", "project", "reference"]),
    created_at=st.integers(min_value=0, max_value=2**53),
    updated_at=st.integers(min_value=0, max_value=2**53),
    extra=extras,
)


@given(notes)
@settings(max_examples=300)
def test_parse_of_serialise_is_identity(note: Note) -> None:
    written = serialise_note(note)
    assert parse_note(written) == note
    assert parse_note_bytes(written.encode("utf-8")) == note


@given(notes)
def test_hash_of_a_note_read_back_equals_the_hash_written(note: Note) -> None:
    again = parse_note(serialise_note(note))
    assert again.content_hash == note.content_hash
    assert again.content_hash_without_id == note.content_hash_without_id


@given(notes)
def test_crlf_files_read_like_lf_files(note: Note) -> None:
    written = serialise_note(note)
    assert parse_note(written.replace("\n", "\r\n")).content_hash == note.content_hash


@given(notes)
def test_pretty_printed_frontmatter_reads_the_same(note: Note) -> None:
    head, _, body = serialise_note(note).partition("\n---\n")
    pretty = json.dumps(json.loads(head.removeprefix("---\n")), indent=2, ensure_ascii=True)
    assert parse_note(f"---\n{pretty}\n---\n{body}") == note


@given(notes, st.integers(0, 2**40), st.integers(0, 2**40))
def test_times_never_change_the_hash(note: Note, created: int, updated: int) -> None:
    moved = note.with_changes(created_at=created, updated_at=updated)
    assert moved.content_hash == note.content_hash


@given(st.lists(text, max_size=8) | text)
def test_tag_cleaning_is_idempotent(raw: list[str] | str) -> None:
    once = clean_tags(raw)
    assert clean_tags(once) == once
    assert clean_tags(", ".join(once)) == once
    assert all(tag and tag == tag.strip() and "," not in tag for tag in once)
    assert not any(char in string.ascii_uppercase for tag in once for char in tag)
    assert len(set(once)) == len(once)


@given(text, st.text("0123456789abcdef", min_size=3, max_size=3))
def test_generated_ids_are_always_valid(summary: str, suffix: str) -> None:
    note_id = generate_id(summary, lambda count: suffix)
    assert is_valid_id(note_id) and note_id.endswith("-" + suffix)
    assert note_id == note_id.lower() and len(note_id) <= 52
