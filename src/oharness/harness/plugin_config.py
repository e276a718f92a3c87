"""Which plugins run: ``$OHARNESS_HOME/plugins.json`` and the ``oharness.plugins`` entry points.

``{"runtimePlugins": [{"id": "...", "enabled": true, "config": {...}}]}``. Built-in plugins
(``memory``) run unless listed with ``"enabled": false``; plugins an embedder passes in run
unless switched off the same way; third-party plugins found through the entry-point group
``oharness.plugins`` run only when listed (``enabled`` defaults to true for a listed plugin).
An entry point names a factory called with the plugin's config (a plugin class works), or a
ready plugin object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from oharness.errors import ConfigError
from oharness.harness.plugin import Plugin
from oharness.project.config import read_config_file

ENTRY_POINT_GROUP = "oharness.plugins"


@dataclass(frozen=True)
class PluginEntry:
    """One ``runtimePlugins`` entry."""

    id: str
    enabled: bool = True
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PluginsFile:
    """The parsed ``plugins.json`` (empty when the file does not exist)."""

    entries: tuple[PluginEntry, ...] = ()

    def entry(self, plugin_id: str) -> PluginEntry | None:
        return next((entry for entry in self.entries if entry.id == plugin_id), None)

    def enabled(self, plugin_id: str, *, default: bool) -> bool:
        """Listed: its ``enabled``; not listed: ``default``."""
        entry = self.entry(plugin_id)
        return default if entry is None else entry.enabled

    def config(self, plugin_id: str) -> Mapping[str, Any]:
        entry = self.entry(plugin_id)
        return entry.config if entry is not None else {}


def parse_plugins(data: Any, source: str) -> PluginsFile:
    """Validate the JSON of a plugins file."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: must hold a JSON object", file=source)
    runtime = data.get("runtimePlugins", [])
    if not isinstance(runtime, list):
        raise ConfigError(f"{source}: 'runtimePlugins' must be a list", file=source)
    entries = []
    for index, item in enumerate(runtime):
        where = f"{source}: runtimePlugins[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            raise ConfigError(f"{where} needs a string 'id'", file=source, key="runtimePlugins")
        enabled = item.get("enabled", True)
        config = item.get("config", {})
        if not isinstance(enabled, bool):
            raise ConfigError(f"{where}: 'enabled' must be true or false", file=source)
        if not isinstance(config, dict):
            raise ConfigError(f"{where}: 'config' must be a JSON object", file=source)
        entries.append(PluginEntry(item["id"], enabled, config))
    return PluginsFile(tuple(entries))


def read_plugins_file(path: Path) -> PluginsFile:
    """Read ``plugins.json``; a missing file lists nothing."""
    data = read_config_file(path)
    return PluginsFile() if data is None else parse_plugins(data, str(path))


class EntryPointLike(Protocol):
    """What we use of :class:`importlib.metadata.EntryPoint`."""

    @property
    def name(self) -> str: ...

    def load(self) -> Any: ...


EntryPointSource = Callable[[], Iterable[EntryPointLike]]


def installed_entry_points() -> list[EntryPointLike]:
    """The installed ``oharness.plugins`` entry points."""
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def instantiate(loaded: Any, config: Mapping[str, Any], name: str) -> Plugin:
    """A plugin from what an entry point loaded: an object with ``setup``, or a factory."""
    if not isinstance(loaded, type) and callable(getattr(loaded, "setup", None)):
        plugin: Plugin = loaded
    elif callable(loaded):
        plugin = loaded(config)
    else:
        raise ConfigError(f"entry point {name!r} is neither a plugin nor a plugin factory")
    if not isinstance(getattr(plugin, "id", None), str) or not callable(
        getattr(plugin, "setup", None)
    ):
        raise ConfigError(f"entry point {name!r} did not give a plugin (an id and a setup method)")
    return plugin
