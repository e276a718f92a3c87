"""OpenAI-compatible chat completions over httpx2 (OpenAI, DashScope, vLLM, Ollama, llama.cpp).

Wire mapping (``POST {base_url}/chat/completions``):

- the system prompt is the first message (``role: system``);
- a user message with no attachments is a plain string; with attachments its ``content`` is a
  list of text parts: **the user's own words first**, then one part per attachment (the
  ``<recalled-memory>`` block) — one user turn, the words kept apart from what was attached;
- assistant tool calls are ``tool_calls`` with JSON-text ``arguments``; tool results are
  ``role: tool`` messages with the ``tool_call_id``;
- structured output uses ``response_format: {"type": "json_schema", ...}``.
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
    parse_json_output,
    parse_tool_arguments,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def user_content(message: Message) -> str | list[dict[str, Any]]:
    """A user message's ``content``: the words, then each attachment as its own text part."""
    if not message.attachments:
        return message.text
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}]
    parts.extend({"type": "text", "text": item.text} for item in message.attachments)
    return parts


def wire_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The ``messages`` array of a request."""
    wire: list[dict[str, Any]] = []
    if request.system:
        wire.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role == "user":
            wire.append({"role": "user", "content": user_content(message)})
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments_text()},
                    }
                    for call in message.tool_calls
                ]
            wire.append(entry)
        else:
            wire.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
            )
    return wire


def request_body(model: str, request: ModelRequest) -> dict[str, Any]:
    """The whole JSON body of a chat-completions call."""
    body: dict[str, Any] = {
        "model": model,
        "messages": wire_messages(request),
        "max_tokens": request.max_tokens,
    }
    if request.tools:
        body["tools"] = [tool.openai() for tool in request.tools]
    if request.json_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": dict(request.json_schema)},
        }
    return body


def parse_reply(data: dict[str, Any], *, structured: bool) -> ModelReply:
    """A :class:`ModelReply` from a chat-completions answer."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError("the model answered without choices", code="model_output")
    choice = choices[0]
    raw_message = choice.get("message")
    message: dict[str, Any] = raw_message if isinstance(raw_message, dict) else {}
    content = message.get("content")
    if isinstance(content, list):  # some servers answer with parts
        content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    text = content if isinstance(content, str) else ""
    calls = []
    for index, raw in enumerate(message.get("tool_calls") or []):
        if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
            continue
        function = raw["function"]
        call_id = str(raw.get("id") or f"call_{index}")
        calls.append(
            parse_tool_arguments(call_id, str(function.get("name", "")), function.get("arguments"))
        )
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    return ModelReply(
        text=text,
        tool_calls=tuple(calls),
        stop_reason=str(choice.get("finish_reason") or "stop"),
        data=parse_json_output(text) if structured and not calls else None,
        usage={key: value for key, value in usage.items() if isinstance(value, int)},
    )


class OpenAIChatModel(HttpChatModel):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, transport=transport)

    def complete(self, request: ModelRequest, *, cancel: CancelToken | None = None) -> ModelReply:
        """One chat-completions call."""
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        data = post_json(
            self._client,
            f"{self.base_url}/chat/completions",
            headers=headers,
            body=request_body(self.model, request),
            timeout_s=request.timeout_s,
            provider=f"the model server ({self.name})",
            cancel=cancel,
        )
        return parse_reply(data, structured=request.json_schema is not None)
