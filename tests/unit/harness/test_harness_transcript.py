"""Transcripts on disk: JSONL, metadata, compaction records, resume (spec 09.2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oharness.errors import ConflictError, NotFoundError, StorageError, ValidationError
from oharness.harness.message import Attachment, Message, ToolCall
from oharness.harness.session import Session, new_session_id
from oharness.harness.transcript import SessionHeader, TranscriptStore, check_session_id


def clock() -> int:
    return 1_789_000_000_000


def started(tmp_path: Path, project_id: str | None = "p-1") -> tuple[TranscriptStore, Session]:
    store = TranscriptStore(tmp_path / "sessions")
    header = SessionHeader("s-1", project_id, clock())
    path = store.create(header)
    return store, Session(header, clock=clock, store=store, path=path)


def test_messages_round_trip_with_their_metadata(tmp_path: Path) -> None:
    store, session = started(tmp_path)
    assert session.path == tmp_path / "sessions" / "p-1" / "s-1.jsonl"
    block = Attachment("memory", "recalled-memory", "<recalled-memory/>", {"recalled": [1]})
    user = Message(
        session.next_message_id(),
        "user",
        "My own words",
        (block,),
        metadata={"memory": {"recalled": [{"id": "a-1", "scope": "project"}]}},
    )
    call = ToolCall("c1", "remember", None, "{broken")
    assistant = Message(session.next_message_id(), "assistant", "", tool_calls=(call,))
    tool = Message(session.next_message_id(), "tool", "{}", tool_call_id="c1", is_error=True)
    for message in (user, assistant, tool):
        session.append(message)
    loaded = store.load(session.path or Path())
    assert loaded.messages == [user, assistant, tool]
    assert loaded.last_sequence == 3 and loaded.header.project_id == "p-1"
    lines = (session.path or Path()).read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["type"] == "session" and len(lines) == 4
    assert json.loads(lines[1])["message"]["text"] == "My own words"
    assert session.title == "My own words"


def test_a_compaction_record_replaces_messages_on_load(tmp_path: Path) -> None:
    store, session = started(tmp_path)
    old = [session.append(Message(session.next_message_id(), "user", f"u{n}")) for n in range(3)]
    summary = Message(session.next_message_id(), "user", "summary", metadata={"summary": {"n": 2}})
    session.compact(old[:2], summary, "manual")
    assert [m.text for m in session.messages] == ["summary", "u2"]
    resumed = Session.from_transcript(store.load(session.path or Path()), clock=clock, store=store)
    assert [m.text for m in resumed.messages] == ["summary", "u2"]
    assert resumed.resumed and resumed.next_message_id() == "m5"
    assert resumed.title == "u2"


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    store, session = started(tmp_path)
    session.append(Message("m1", "user", "kept"))
    with open(session.path or Path(), "a", encoding="utf-8") as handle:
        handle.write('{"type": "message", "message": {"id": "m2", "ro')
    loaded = store.load(session.path or Path())
    assert [m.text for m in loaded.messages] == ["kept"] and loaded.skipped_lines == [3]


def test_finding_and_listing_sessions(tmp_path: Path) -> None:
    store, session = started(tmp_path)
    assert store.find("s-1", "p-1") == session.path
    assert store.find("s-1", "p-other") == session.path  # found in another project's folder
    with pytest.raises(NotFoundError, match="no session"):
        store.find("s-2", "p-1")
    store.create(SessionHeader("s-0", "p-1", clock() + 5, subagent=True, parent_id="s-1"))
    assert [h.id for h in store.list_sessions("p-1")] == ["s-0", "s-1"]
    assert store.list_sessions("p-1")[0].subagent
    _, loose = started(tmp_path / "b", None)
    assert loose.path == tmp_path / "b" / "sessions" / "none" / "s-1.jsonl"


def test_ids_and_files_are_checked(tmp_path: Path) -> None:
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ValidationError):
            check_session_id(bad)
    store, _ = started(tmp_path)
    with pytest.raises(ConflictError, match="exists already"):
        store.create(SessionHeader("s-1", "p-1", 0))
    not_a_transcript = tmp_path / "sessions" / "p-1" / "x.jsonl"
    not_a_transcript.write_text('{"type": "message"}\n', encoding="utf-8")
    with pytest.raises(StorageError, match="not a transcript"):
        store.load(not_a_transcript)


def test_session_ids_sort_by_start() -> None:
    first = new_session_id(lambda: 1_789_000_000_000, lambda n: "a" * n)
    later = new_session_id(lambda: 1_789_000_100_000, lambda n: "0" * n)
    assert first == "20260910-002640-aaaaaa" and later > first
    assert check_session_id(first) == first
