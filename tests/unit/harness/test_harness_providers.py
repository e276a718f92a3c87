"""Choosing models from config, ``--model`` and the providers' environment (spec 09.4)."""

from __future__ import annotations

import pytest

from oharness.errors import ConfigError
from oharness.harness.anthropic_provider import AnthropicChatModel
from oharness.harness.message import Message
from oharness.harness.model import ModelError, ModelRequest
from oharness.harness.openai_provider import OpenAIChatModel
from oharness.harness.providers import (
    ModelSpec,
    ProviderEnvironment,
    configured_models,
    create_model,
    parse_model_spec,
)
from oharness.harness.scripted import ScriptedModel, json_reply, text_reply, tool_reply
from oharness.settings import ModelSettings

LOCAL = ProviderEnvironment(openai_base_url="http://127.0.0.1:9/v1")


def test_model_specs() -> None:
    assert parse_model_spec("openai:qwen2.5:7b") == ModelSpec("openai", "qwen2.5:7b")
    assert str(parse_model_spec("anthropic:claude-x")) == "anthropic:claude-x"
    for bad in ("gpt-4o", "mistral:large", "openai:"):
        with pytest.raises(ConfigError, match="openai:NAME"):
            parse_model_spec(bad)


def test_providers_and_their_keys() -> None:
    local = create_model(parse_model_spec("openai:llama"), LOCAL)
    assert isinstance(local, OpenAIChatModel) and local.base_url == "http://127.0.0.1:9/v1"
    assert local.name == "openai:llama"
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        create_model(parse_model_spec("openai:gpt"), ProviderEnvironment())
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        create_model(parse_model_spec("anthropic:claude"), LOCAL)
    claude = create_model(
        parse_model_spec("anthropic:claude"), ProviderEnvironment(anthropic_api_key="k")
    )
    assert isinstance(claude, AnthropicChatModel) and claude.base_url == "https://api.anthropic.com"
    for model in (local, claude):
        model.close()


def test_main_and_small_from_config_and_the_override() -> None:
    models = configured_models(ModelSettings(main="openai:big", small="openai:small"), LOCAL)
    assert models.main.name == "openai:big" and models.summariser.name == "openai:small"
    chosen = configured_models(ModelSettings(main="openai:big"), LOCAL, main_override="openai:o")
    assert chosen.main.name == "openai:o" and chosen.summariser is chosen.main
    with pytest.raises(ConfigError, match="--model"):
        configured_models(ModelSettings(), LOCAL)
    with pytest.raises(ConfigError, match=r"models\.small"):
        configured_models(ModelSettings(main="openai:a", small="nope"), LOCAL)


def test_the_scripted_model_answers_in_order_and_records() -> None:
    model = ScriptedModel([tool_reply("memory", {}), lambda request: text_reply(request.system)])
    request = ModelRequest(system="S", messages=(Message("m1", "user", "hi"),))
    assert model.complete(request).tool_calls[0].name == "memory"
    assert model.complete(request).text == "S"
    assert model.requests == [request, request]
    with pytest.raises(ModelError, match="no more answers"):
        model.complete(request)
    model.add(json_reply({"ok": True}))
    assert model.complete(request).data == {"ok": True}
