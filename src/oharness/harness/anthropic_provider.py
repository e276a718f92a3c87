"""Anthropic messages API over httpx2.

Wire mapping (``POST {base_url}/v1/messages``):

- the system prompt is the top-level ``system`` string;
- a user message is a list of text blocks: the user's own words first, then one block per
  attachment; tool results are ``tool_result`` blocks of a user turn; consecutive turns of one
  role are merged (the API wants user and assistant to alternate);
- structured output forces a tool named ``answer`` whose input schema is the requested schema,
  and reads the answer from that tool call's input.
"""

from __future__ import annotations

from typing import Any

import httpx2

from oharness.harness.http_call import HttpChatModel, post_json
from oharness.harness.message import Message
from oharness.harness.model import (
    CancelToken,
    ModelError,
    ModelReply,
    ModelRequest,
    parse_tool_arguments,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
ANSWER_TOOL = "answer"


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.text,
        }
        if message.is_error:
            result["is_error"] = True
        return [result]
    texts = [message.text, *(item.text for item in message.attachments)]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts if text]
    for call in message.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": dict(call.arguments) if call.arguments is not None else {},
            }
        )
    return blocks


def wire_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The ``messages`` array, consecutive turns of one role merged."""
    wire: list[dict[str, Any]] = []
    for message in request.messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def request_body(model: str, request: ModelRequest) -> dict[str, Any]:
    """The whole JSON body of a messages call."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": wire_messages(request),
    }
    if request.system:
        body["system"] = request.system
    tools = [tool.anthropic() for tool in request.tools]
    if request.json_schema is not None:
        tools.append(
            {
                "name": ANSWER_TOOL,
                "description": "Give the answer in the required structure.",
                "input_schema": dict(request.json_schema),
            }
        )
        body["tool_choice"] = {"type": "tool", "name": ANSWER_TOOL}
    if tools:
        body["tools"] = tools
    return body


def parse_reply(data: dict[str, Any], *, structured: bool) -> ModelReply:
    """A :class:`ModelReply` from a messages answer."""
    content = data.get("content")
    if not isinstance(content, list):
        raise ModelError("the model answered without content", code="model_output")
    texts: list[str] = []
    calls = []
    answer: Any = None
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            if structured and block.get("name") == ANSWER_TOOL:
                answer = block.get("input")
                continue
            calls.append(
                parse_tool_arguments(
                    str(block.get("id", "")), str(block.get("name", "")), block.get("input")
                )
            )
    if structured and answer is None:
        raise ModelError("the model did not give a structured answer", code="model_output")
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    return ModelReply(
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=str(data.get("stop_reason") or "end_turn"),
        data=answer,
        usage={key: value for key, value in usage.items() if isinstance(value, int)},
    )


class AnthropicChatModel(HttpChatModel):
    """A model behind the Anthropic messages API."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, transport=transport)
        self._key = api_key  # required here, unlike OpenAI-compatible local servers

    def complete(self, request: ModelRequest, *, cancel: CancelToken | None = None) -> ModelReply:
        """One messages call."""
        data = post_json(
            self._client,
            f"{self.base_url}/v1/messages",
            headers={
                "x-api-key": self._key,
                "anthropic-version": API_VERSION,
                "content-type": "application/json",
            },
            body=request_body(self.model, request),
            timeout_s=request.timeout_s,
            provider=f"Anthropic ({self.name})",
            cancel=cancel,
        )
        return parse_reply(data, structured=request.json_schema is not None)
