"""Choosing a model: ``provider:name`` specs, the providers' usual settings, main and small.

``models.main`` / ``models.small`` in config (or ``--model``) name a model as
``openai:NAME`` (any OpenAI-compatible server) or ``anthropic:NAME``. The credentials and base
URLs come from the environment at the process edge (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``) and reach this module as a
:class:`ProviderEnvironment`.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx2

from oharness.errors import ConfigError
from oharness.harness import anthropic_provider, openai_provider
from oharness.harness.model import ChatModel
from oharness.settings import ModelSettings

PROVIDERS = ("openai", "anthropic")


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True)
class ProviderEnvironment:
    """Provider credentials and endpoints (read from the environment by the CLI)."""

    openai_base_url: str | None = None
    openai_api_key: str | None = None
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None


@dataclass(frozen=True)
class Models:
    """The main model (the conversation) and the small one (summaries; defaults to main)."""

    main: ChatModel
    small: ChatModel | None = None

    @property
    def summariser(self) -> ChatModel:
        return self.small if self.small is not None else self.main


def parse_model_spec(text: str, *, source: str = "--model") -> ModelSpec:
    """``openai:NAME`` or ``anthropic:NAME``."""
    provider, sep, model = text.partition(":")
    if not sep or provider not in PROVIDERS or not model:
        raise ConfigError(
            f"{source}: {text!r} is not a model; write openai:NAME (any OpenAI-compatible server, "
            "with OPENAI_BASE_URL) or anthropic:NAME",
            key=source,
        )
    return ModelSpec(provider, model)


def create_model(
    spec: ModelSpec,
    environment: ProviderEnvironment,
    *,
    transport: httpx2.BaseTransport | None = None,
) -> ChatModel:
    """A provider adapter for ``spec``."""
    if spec.provider == "anthropic":
        if not environment.anthropic_api_key:
            raise ConfigError(
                f"{spec}: set ANTHROPIC_API_KEY to use Anthropic models", key="ANTHROPIC_API_KEY"
            )
        return anthropic_provider.AnthropicChatModel(
            spec.model,
            api_key=environment.anthropic_api_key,
            base_url=environment.anthropic_base_url or anthropic_provider.DEFAULT_BASE_URL,
            transport=transport,
        )
    base_url = environment.openai_base_url or openai_provider.DEFAULT_BASE_URL
    if base_url.rstrip("/") == openai_provider.DEFAULT_BASE_URL and not environment.openai_api_key:
        raise ConfigError(
            f"{spec}: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible "
            "server that needs no key)",
            key="OPENAI_API_KEY",
        )
    return openai_provider.OpenAIChatModel(
        spec.model, base_url=base_url, api_key=environment.openai_api_key, transport=transport
    )


def configured_models(
    settings: ModelSettings,
    environment: ProviderEnvironment,
    *,
    main_override: str | None = None,
    transport: httpx2.BaseTransport | None = None,
) -> Models:
    """The main and small models from config (``main_override``: ``--model``)."""
    main_text = main_override or settings.main
    if not main_text:
        raise ConfigError(
            "no model configured: pass --model openai:NAME or anthropic:NAME, or set models.main "
            "in config.json",
            key="models.main",
        )
    source = "--model" if main_override else "models.main"
    main = create_model(
        parse_model_spec(main_text, source=source), environment, transport=transport
    )
    small = None
    if settings.small:
        spec = parse_model_spec(settings.small, source="models.small")
        small = create_model(spec, environment, transport=transport)
    return Models(main, small)
