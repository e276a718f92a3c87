"""The OpenAI-compatible adapter: wire format out, replies in, errors translated (spec 09.4)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from oharness.harness.message import Attachment, Message, ToolCall
from oharness.harness.model import CancelToken, ModelCancelled, ModelError, ModelRequest, ToolSpec
from oharness.harness.openai_provider import OpenAIChatModel

Handler = Callable[[httpx2.Request], httpx2.Response]
TOOL = ToolSpec("remember", "Save a note.", {"type": "object", "properties": {}})


def answer(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "choices": [{"message": message, "finish_reason": finish}],
        "usage": {"total_tokens": 7},
    }


def model(handler: Handler, seen: list[httpx2.Request] | None = None) -> OpenAIChatModel:
    def record(request: httpx2.Request) -> httpx2.Response:
        if seen is not None:
            seen.append(request)
        return handler(request)

    return OpenAIChatModel(
        "gpt-test",
        base_url="http://models.test/v1/",
        api_key="k-123",
        transport=httpx2.MockTransport(record),
    )


def conversation() -> tuple[Message, ...]:
    block = Attachment("memory", "recalled-memory", "<recalled-memory>…</recalled-memory>")
    return (
        Message("m1", "user", "How do we deploy?", (block,)),
        Message("m2", "assistant", "", tool_calls=(ToolCall("c1", "remember", {"summary": "x"}),)),
        Message("m3", "tool", '{"id": "x-1"}', tool_call_id="c1", tool_name="remember"),
        Message("m4", "user", "thanks"),
    )


def test_the_request_keeps_the_users_words_apart_from_attachments() -> None:
    seen: list[httpx2.Request] = []
    reply = model(lambda r: httpx2.Response(200, json=answer({"content": "ok"})), seen).complete(
        ModelRequest(system="SYSTEM", messages=conversation(), tools=(TOOL,), max_tokens=99)
    )
    assert reply.text == "ok" and reply.usage == {"total_tokens": 7}
    [request] = seen
    assert str(request.url) == "http://models.test/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer k-123"
    body = json.loads(request.content)
    assert body["model"] == "gpt-test" and body["max_tokens"] == 99
    system, user, assistant, tool, plain = body["messages"]
    assert system == {"role": "system", "content": "SYSTEM"}
    assert user["content"] == [
        {"type": "text", "text": "How do we deploy?"},
        {"type": "text", "text": "<recalled-memory>…</recalled-memory>"},
    ]
    assert assistant["content"] is None
    assert assistant["tool_calls"][0]["function"] == {
        "name": "remember",
        "arguments": '{"summary": "x"}',
    }
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": '{"id": "x-1"}'}
    assert plain == {"role": "user", "content": "thanks"}
    assert body["tools"][0]["function"]["name"] == "remember"
    assert "response_format" not in body


def test_tool_calls_are_parsed_and_bad_json_arguments_kept_as_text() -> None:
    message = {
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "memory", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "forget", "arguments": "{oops"}},
        ],
    }
    reply = model(lambda r: httpx2.Response(200, json=answer(message, "tool_calls"))).complete(
        ModelRequest(system="", messages=(Message("m1", "user", "hi"),))
    )
    good, bad = reply.tool_calls
    assert good == ToolCall("a", "memory", {})
    assert bad.arguments is None and bad.raw_arguments == "{oops"
    assert reply.stop_reason == "tool_calls"


def test_structured_output_asks_for_a_json_schema() -> None:
    seen: list[httpx2.Request] = []
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    reply = model(
        lambda r: httpx2.Response(200, json=answer({"content": '```json\n{"n": 3}\n```'})), seen
    ).complete(ModelRequest(system="", messages=(Message("m1", "user", "n?"),), json_schema=schema))
    assert reply.data == {"n": 3}
    body = json.loads(seen[0].content)
    assert body["response_format"]["json_schema"]["schema"] == schema


def test_not_json_when_json_was_asked_is_a_model_error() -> None:
    client = model(lambda r: httpx2.Response(200, json=answer({"content": "sure!"})))
    request = ModelRequest(system="", messages=(), json_schema={"type": "object"})
    with pytest.raises(ModelError, match="did not answer with JSON"):
        client.complete(request)


@pytest.mark.parametrize(
    ("status", "transient", "fragment"),
    [(401, False, "check the API key"), (429, True, "slow down"), (503, True, "slow down")],
)
def test_http_errors_are_model_errors(status: int, transient: bool, fragment: str) -> None:
    body = {"error": {"message": "slow down", "type": "x"}}
    client = model(lambda r: httpx2.Response(status, json=body))
    with pytest.raises(ModelError) as raised:
        client.complete(ModelRequest(system="", messages=()))
    assert raised.value.status == status and raised.value.transient is transient
    assert fragment in raised.value.message and "k-123" not in raised.value.message


def test_timeouts_and_unreachable_servers_are_model_errors() -> None:
    def timeout(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("too slow", request=request)

    def refused(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    with pytest.raises(ModelError) as raised:
        model(timeout).complete(ModelRequest(system="", messages=(), timeout_s=2.5))
    assert raised.value.code == "model_timeout" and "2.5 s" in raised.value.message
    with pytest.raises(ModelError) as raised:
        model(refused).complete(ModelRequest(system="", messages=()))
    assert raised.value.code == "network" and raised.value.transient


def test_the_timeout_reaches_the_transport() -> None:
    seen: list[httpx2.Request] = []
    model(lambda r: httpx2.Response(200, json=answer({"content": "ok"})), seen).complete(
        ModelRequest(system="", messages=(), timeout_s=7.0)
    )
    assert seen[0].extensions["timeout"]["read"] == 7.0


def test_a_call_in_flight_can_be_cancelled() -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(request: httpx2.Request) -> httpx2.Response:
        entered.set()
        release.wait(10)
        return httpx2.Response(200, json=answer({"content": "late"}))

    token = CancelToken()
    outcome: dict[str, BaseException] = {}

    def call() -> None:
        try:
            model(slow).complete(ModelRequest(system="", messages=()), cancel=token)
        except BaseException as exc:
            outcome["error"] = exc

    caller = threading.Thread(target=call)
    caller.start()
    assert entered.wait(10)
    token.cancel()
    caller.join(10)
    release.set()
    assert isinstance(outcome.get("error"), ModelCancelled)
    with pytest.raises(ModelCancelled):  # a cancelled token refuses new calls at once
        model(slow).complete(ModelRequest(system="", messages=()), cancel=token)


def test_a_token_that_is_never_cancelled_changes_nothing() -> None:
    reply = model(lambda r: httpx2.Response(200, json=answer({"content": "ok"}))).complete(
        ModelRequest(system="", messages=()), cancel=CancelToken()
    )
    assert reply.text == "ok"


def test_answers_without_choices_or_json_are_refused() -> None:
    with pytest.raises(ModelError, match="without choices"):
        model(lambda r: httpx2.Response(200, json={"choices": []})).complete(
            ModelRequest(system="", messages=())
        )
    with pytest.raises(ModelError, match="not JSON"):
        model(lambda r: httpx2.Response(200, text="<html>")).complete(
            ModelRequest(system="", messages=())
        )
