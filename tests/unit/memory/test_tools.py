"""Tool definitions for function calling, and the dispatcher (spec 02.1)."""

from __future__ import annotations

import json
from pathlib import Path

from oharness.memory.tools import anthropic_tools, call_tool, openai_tools, tool_definitions
from oharness.memory.workspace import Workspace


def test_definitions_are_json_and_shaped_for_both_apis() -> None:
    names = [tool["name"] for tool in tool_definitions()]
    assert names == ["remember", "memory", "forget"]
    for tool in openai_tools():
        assert tool["type"] == "function"
        assert tool["function"]["parameters"]["type"] == "object"
    for tool in anthropic_tools():
        assert set(tool) == {"name", "description", "input_schema"}
    json.dumps(openai_tools())
    remember = tool_definitions()[0]["input_schema"]
    assert "required" not in remember  # an update needs only the id and what it changes
    assert "query" in tool_definitions()[1]["input_schema"]["properties"]


def test_a_model_can_remember_read_list_and_forget(workspace: Workspace) -> None:
    service = workspace.service
    saved = call_tool(
        service,
        "remember",
        {"summary": "Use fills", "body": "Cards use fills.", "type": "feedback", "tags": ["ui"]},
    )
    assert saved["created"] is True and saved["scope"] == "project"
    assert Path(saved["path"]).is_file()
    read = call_tool(service, "memory", {"id": saved["id"]})
    assert read["summary"] == "Use fills" and read["tags"] == ["ui"]
    found = call_tool(service, "memory", {"query": "fills on cards"})
    assert found["results"][0]["id"] == saved["id"]
    assert found["results"][0]["snippet"] == "Cards use fills."
    listing = call_tool(service, "memory", {})
    assert listing["total"] == 1 and listing["notes"][0]["id"] == saved["id"]
    forgotten = call_tool(service, "forget", {"id": saved["id"]})
    assert forgotten["backupId"]
    assert call_tool(service, "memory", {})["total"] == 0


def test_bad_calls_come_back_as_errors_a_model_can_read(workspace: Workspace) -> None:
    service = workspace.service
    cases: list[tuple[str, dict[str, object], str]] = [
        ("remember", {"summary": "x"}, "missing required argument 'body'"),
        ("remember", {"body": "y", "summary": None}, "missing required argument 'summary'"),
        ("remember", {"id": "nope-1", "tags": ["a"]}, "no note 'nope-1'"),
        ("remember", {"summary": "x", "body": "y", "colour": 1}, "unknown argument(s) colour"),
        ("memory", {"id": "nope-1"}, "no note 'nope-1'"),
        ("memory", {"limit": "ten"}, "limit must be an integer"),
        ("forget", {"id": "x", "scope": "team"}, "unknown scope"),
        ("delete", {}, "unknown tool"),
    ]
    for name, arguments, message in cases:
        result = call_tool(service, name, arguments)
        assert message in result["error"]["message"], (name, result)


def test_an_update_through_the_tool_keeps_the_fields_it_leaves_out(workspace: Workspace) -> None:
    service = workspace.service
    saved = call_tool(service, "remember", {"summary": "gRPC deadlines", "body": "Set 2 s."})
    updated = call_tool(service, "remember", {"id": saved["id"], "tags": ["grpc", "deadline"]})
    assert "error" not in updated, updated
    note = service.find(saved["id"]).note
    assert (note.summary, note.body, note.tags) == (
        "gRPC deadlines",
        "Set 2 s.\n",
        ("grpc", "deadline"),
    )
