"""Reading the user and project config files into :class:`~oharness.settings.Settings`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oharness.errors import ConfigError
from oharness.project.identity import STATE_DIR
from oharness.settings import ConfigLayer, Settings, build_settings


def read_config_file(path: Path) -> dict[str, Any] | None:
    """A config file's JSON object, ``None`` when absent, :class:`ConfigError` when broken."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot be read ({exc.strerror or exc})", file=str(path)
        ) from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"{path}: not valid JSON ({exc}); fix the file or remove it", file=str(path)
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object", file=str(path))
    return data


def load_settings(
    user_config: Path | None, project_root: Path | None, overrides: dict[str, Any] | None = None
) -> Settings:
    """Built-in defaults, then the user's config, then the project's, then ``overrides``."""
    layers: list[ConfigLayer] = []
    if user_config is not None:
        data = read_config_file(user_config)
        if data is not None:
            layers.append(ConfigLayer(str(user_config), data))
    if project_root is not None:
        path = project_root / STATE_DIR / "config.json"
        data = read_config_file(path)
        if data is not None:
            layers.append(ConfigLayer(str(path), data, is_project=True))
    if overrides:
        layers.append(ConfigLayer("environment", overrides))
    return build_settings(layers)
