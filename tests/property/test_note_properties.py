"""Property tests of the note format (spec 13.2): round-trips, hash stability, tag cleaning."""

from __future__ import annotations

import json
import string
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from oharness.errors import NoteFormatError
from oharness.notes.format import Note, parse_note, parse_note_bytes, serialise_note
from oharness.notes.ids import clean_tags, generate_id, is_valid_id
from oharness.notes.invisible import remove_invisible
from oharness.notes.store import NoteStore

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,40}", fullmatch=True)
# Any unicode except surrogates (not encodable as UTF-8) and control characters (refused in
# summaries and tags; bodies may hold tab and newline); summaries are one non-blank line.
text = st.text(st.characters(exclude_categories=["Cs", "Cc"]), max_size=300)
body_text = st.text(
    st.characters(exclude_categories=["Cs", "Cc"], include_characters="\t\n"), max_size=300
)
json_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=300)
summaries = text.map(lambda s: s.replace("\n", " ").replace("\r", " ")).filter(
    lambda s: bool(s.strip())
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | json_text,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(json_text, children, max_size=3)
    ),
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
    body=body_text,
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


#: Tags as a person may give them: invisible characters are refused (tests/unit/notes).
tag_text = text.map(remove_invisible)


@given(st.lists(tag_text, max_size=8) | tag_text)
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


# --- fuzzing the parser: never a crash, never a write ----------------------------------------

any_text = st.text(st.characters(), max_size=200)  # surrogates and control characters included
any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | any_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(any_text, children, max_size=4)
    ),
    max_leaves=10,
)
frontmatters = st.dictionaries(
    st.sampled_from(["id", "summary", "type", "tags", "createdAt", "updatedAt"]) | any_text,
    any_json,
    max_size=7,
)


def _file_bytes(head: object, body: str) -> bytes:
    text = f"---\n{json.dumps(head, ensure_ascii=True)}\n---\n{body}"
    return text.encode("utf-8", "surrogatepass")


def _parses_or_refuses(data: bytes) -> None:
    try:
        note = parse_note_bytes(data)
    except NoteFormatError as exc:
        assert exc.details["reason"] and "\n" not in exc.message
        return
    # Whatever is accepted can be written back as UTF-8 and reads the same.
    assert parse_note_bytes(serialise_note(note).encode("utf-8")) == note


@given(st.binary(max_size=400))
@settings(max_examples=300)
def test_arbitrary_bytes_parse_or_are_refused(data: bytes) -> None:
    _parses_or_refuses(data)
    _parses_or_refuses(b"---\n" + data)
    _parses_or_refuses(b'---\n{"id":"n-1","summary":"S"}\n---\n' + data)


@given(frontmatters, any_text)
@settings(max_examples=300)
def test_arbitrary_json_frontmatter_parses_or_is_refused(
    head: dict[str, object], body: str
) -> None:
    _parses_or_refuses(_file_bytes(head, body))


@given(
    ids,
    any_text.filter(lambda value: bool(value.strip())),
    st.lists(any_text, max_size=3),
    any_text,
)
@settings(max_examples=300)
def test_surrogates_and_control_characters_are_parse_problems(
    note_id: str, summary: str, tags: list[str], body: str
) -> None:
    head = {"id": note_id, "summary": summary, "tags": tags}
    _parses_or_refuses(_file_bytes(head, body))


@given(
    st.lists(st.binary(max_size=200) | frontmatters.map(lambda h: _file_bytes(h, "b")), max_size=4)
)
@settings(max_examples=60, deadline=None)
def test_a_store_over_fuzzed_files_never_crashes_and_never_writes(
    contents: list[bytes],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder) / "MEMORY"
        directory.mkdir()
        for index, data in enumerate(contents):
            (directory / f"n-{index}.md").write_bytes(data)
        before = {path.name: path.read_bytes() for path in directory.iterdir()}
        store = NoteStore(directory, scope="project", lock_path=Path(folder) / "notes.lock")
        store.refresh(full=True)
        assert len(store.notes()) + len(store.problems()) == len(contents)
        for stored in store.notes():
            serialise_note(stored.note).encode("utf-8")
        after = {path.name: path.read_bytes() for path in directory.iterdir()}
        assert after == before
