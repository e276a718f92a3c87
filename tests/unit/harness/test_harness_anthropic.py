"""The Anthropic adapter against a stub of the messages wire format (spec 09.4)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from oharness.harness.anthropic_provider import AnthropicChatModel
from oharness.harness.message import Attachment, Message, ToolCall
from oharness.harness.model import ModelError, ModelRequest, ToolSpec

TOOL = ToolSpec("memory", "Read notes.", {"type": "object", "properties": {}})


def client(answer: dict[str, Any], seen: list[httpx2.Request], status: int = 200) -> Any:
    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(status, json=answer)

    return AnthropicChatModel(
        "claude-test",
        api_key="ak-1",
        base_url="http://anthropic.test",
        transport=httpx2.MockTransport(handle),
    )


def test_the_request_and_a_text_answer() -> None:
    seen: list[httpx2.Request] = []
    answer = {
        "content": [{"type": "text", "text": "Hello"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    block = Attachment("memory", "recalled-memory", "<recalled-memory>x</recalled-memory>")
    messages = (
        Message("m1", "user", "Earlier summary", metadata={"summary": {"replaced": 3}}),
        Message("m2", "user", "How do we deploy?", (block,)),
        Message("m3", "assistant", "Let me look.", tool_calls=(ToolCall("t1", "memory", {}),)),
        Message("m4", "tool", "refused", tool_call_id="t1", tool_name="memory", is_error=True),
        Message("m5", "user", "and?"),
    )
    reply = client(answer, seen).complete(
        ModelRequest(system="SYS", messages=messages, tools=(TOOL,), max_tokens=50)
    )
    assert reply.text == "Hello" and reply.usage == {"input_tokens": 3, "output_tokens": 1}
    [request] = seen
    assert str(request.url) == "http://anthropic.test/v1/messages"
    assert request.headers["x-api-key"] == "ak-1"
    assert request.headers["anthropic-version"] == "2023-06-01"
    body = json.loads(request.content)
    assert body["system"] == "SYS" and body["max_tokens"] == 50 and body["model"] == "claude-test"
    assert body["tools"] == [TOOL.anthropic()]
    first, assistant, results = body["messages"]
    assert first["role"] == "user"  # two user turns merged: the API wants alternation
    assert [block["text"] for block in first["content"]] == [
        "Earlier summary",
        "How do we deploy?",
        "<recalled-memory>x</recalled-memory>",
    ]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "t1", "name": "memory", "input": {}},
        ],
    }
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "refused", "is_error": True},
        {"type": "text", "text": "and?"},
    ]


def test_tool_use_answers() -> None:
    answer = {
        "content": [
            {"type": "text", "text": "Saving."},
            {"type": "tool_use", "id": "tu", "name": "remember", "input": {"summary": "s"}},
        ],
        "stop_reason": "tool_use",
    }
    reply = client(answer, []).complete(ModelRequest(system="", messages=()))
    assert reply.text == "Saving." and reply.stop_reason == "tool_use"
    assert reply.tool_calls == (ToolCall("tu", "remember", {"summary": "s"}),)


def test_structured_output_forces_the_answer_tool() -> None:
    seen: list[httpx2.Request] = []
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    answer = {"content": [{"type": "tool_use", "id": "a", "name": "answer", "input": {"n": 2}}]}
    reply = client(answer, seen).complete(
        ModelRequest(system="", messages=(Message("m1", "user", "n?"),), json_schema=schema)
    )
    assert reply.data == {"n": 2} and reply.tool_calls == ()
    body = json.loads(seen[0].content)
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    assert body["tools"][-1]["input_schema"] == schema
    with pytest.raises(ModelError, match="structured"):
        client({"content": [{"type": "text", "text": "no"}]}, []).complete(
            ModelRequest(system="", messages=(), json_schema=schema)
        )


def test_errors_name_the_provider_and_never_the_key() -> None:
    answer = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ModelError) as raised:
        client(answer, [], status=529).complete(ModelRequest(system="", messages=()))
    assert raised.value.transient and "Overloaded" in raised.value.message
    assert "Anthropic" in raised.value.message and "ak-1" not in raised.value.message
    with pytest.raises(ModelError, match="without content"):
        client({"nothing": True}, []).complete(ModelRequest(system="", messages=()))
