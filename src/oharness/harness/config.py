"""The harness's own config keys, read from the merged settings (spec 01.5, 09.3).

``permissions``: ``{"allow": [...], "ask": [...], "deny": [...], "defaultMode": "default"}``
(tool-name patterns). ``harness``: ``{"compactAtChars": 200000, "maxSteps": 25}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oharness.errors import ConfigError
from oharness.harness.permission import PermissionMode, PermissionRules, rules_from_config
from oharness.settings import Settings

DEFAULT_COMPACT_AT_CHARS: Final = 200_000
DEFAULT_MAX_STEPS: Final = 25


@dataclass(frozen=True)
class HarnessConfig:
    rules: PermissionRules = field(default_factory=PermissionRules)
    default_mode: PermissionMode = "default"
    compact_at_chars: int = DEFAULT_COMPACT_AT_CHARS
    max_steps: int = DEFAULT_MAX_STEPS


def _positive(section: Mapping[str, Any], key: str, default: int) -> int:
    value = section.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(
            f"config: 'harness.{key}' must be a positive integer; fix or remove it",
            key=f"harness.{key}",
        )
    return value


def harness_config(settings: Settings) -> HarnessConfig:
    """Permission rules, the default mode and loop limits from config."""
    rules, mode = rules_from_config(settings.raw)
    section = settings.raw.get("harness", {})
    if not isinstance(section, Mapping):
        raise ConfigError("config: 'harness' must be a JSON object", key="harness")
    return HarnessConfig(
        rules=rules,
        default_mode=mode or "default",
        compact_at_chars=_positive(section, "compactAtChars", DEFAULT_COMPACT_AT_CHARS),
        max_steps=_positive(section, "maxSteps", DEFAULT_MAX_STEPS),
    )
