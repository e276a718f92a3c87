"""Where sync settings live (spec 07.6).

- ``$OHARNESS_HOME/cloud.json``: ``{"origin": "https://…"}`` — the sync server's URL.
- ``$OHARNESS_HOME/credentials.json`` (mode 0600): ``{"token": "…", "origin": "…"}``. The token
  never lives anywhere else (``OHARNESS_TOKEN`` in the environment wins over the file).
- ``$OHARNESS_HOME/plugins.json``: ``runtimePlugins[id=memory].config`` holds ``syncEnabled``
  (the one switch for both scopes, default on) and ``syncTargets[sha256(stable scope key)]`` =
  ``{"userId", "origin", "enabled"}`` — the account and origin a scope is bound to. Every other
  key of that file is preserved when it is written.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oharness.errors import ConfigError
from oharness.fsio import atomic_write
from oharness.project.config import read_config_file
from oharness.project.paths import HomeLayout, scope_key_digest


@dataclass(frozen=True)
class Target:
    """A scope's binding to an account and origin, and its switch."""

    user_id: str | None
    origin: str | None
    enabled: bool


def _read_config(path: Path) -> dict[str, Any]:
    """A settings file's object; absent means empty (broken ones raise ConfigError)."""
    return read_config_file(path) or {}


class SyncSettingsFile:
    """Reads and writes the sync settings of one ``OHARNESS_HOME``."""

    def __init__(self, home: HomeLayout) -> None:
        self.home = home

    @property
    def credentials_file(self) -> Path:
        return self.home.home / "credentials.json"

    # ---- origin and token ------------------------------------------------------------------

    def origin(self) -> str | None:
        value = _read_config(self.home.cloud_file).get("origin")
        return value if isinstance(value, str) and value else None

    def token(self, environ_token: str | None = None) -> str | None:
        """``OHARNESS_TOKEN`` when given, else the stored token."""
        if environ_token:
            return environ_token
        value = _read_config(self.credentials_file).get("token")
        return value if isinstance(value, str) and value else None

    def login(self, origin: str, token: str | None) -> None:
        """Record the origin (and the token, mode 0600, when one is given)."""
        self.home.home.mkdir(parents=True, exist_ok=True)
        cloud = _read_config(self.home.cloud_file)
        cloud["origin"] = origin
        atomic_write(self.home.cloud_file, (json.dumps(cloud, indent=2) + "\n").encode("utf-8"))
        if token is not None:
            data = {"token": token, "origin": origin}
            atomic_write(
                self.credentials_file,
                (json.dumps(data, indent=2) + "\n").encode("utf-8"),
                mode=0o600,
            )
            os.chmod(self.credentials_file, 0o600)

    def logout(self) -> bool:
        """Forget the stored token (the origin and bindings stay); True if there was one."""
        try:
            os.unlink(self.credentials_file)
        except FileNotFoundError:
            return False
        return True

    # ---- plugins.json ----------------------------------------------------------------------

    def _plugins(self) -> dict[str, Any]:
        return _read_config(self.home.plugins_file)

    @staticmethod
    def _memory_entry(plugins: dict[str, Any]) -> dict[str, Any]:
        runtime = plugins.setdefault("runtimePlugins", [])
        if not isinstance(runtime, list):
            raise ConfigError("plugins.json: runtimePlugins must be a list", key="runtimePlugins")
        for entry in runtime:
            if isinstance(entry, dict) and entry.get("id") == "memory":
                entry.setdefault("config", {})
                return entry
        entry = {"id": "memory", "enabled": True, "config": {}}
        runtime.append(entry)
        return entry

    def _memory_config(self) -> dict[str, Any]:
        plugins = self._plugins()
        runtime = plugins.get("runtimePlugins")
        if isinstance(runtime, list):
            for entry in runtime:
                if isinstance(entry, dict) and entry.get("id") == "memory":
                    config = entry.get("config")
                    return config if isinstance(config, dict) else {}
        return {}

    def _update(self, change: Any) -> None:
        plugins = self._plugins()
        config = self._memory_entry(plugins)["config"]
        change(config)
        self.home.home.mkdir(parents=True, exist_ok=True)
        data = (json.dumps(plugins, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        atomic_write(self.home.plugins_file, data)

    def enabled(self) -> bool:
        """The one switch for both scopes (on unless switched off)."""
        return self._memory_config().get("syncEnabled", True) is not False

    def set_enabled(self, enabled: bool) -> None:
        """Switch sync on or off; mirrored into every target's ``enabled``."""

        def change(config: dict[str, Any]) -> None:
            config["syncEnabled"] = enabled
            targets = config.get("syncTargets")
            if isinstance(targets, dict):
                for target in targets.values():
                    if isinstance(target, dict):
                        target["enabled"] = enabled

        self._update(change)

    def target(self, scope_key: str) -> Target:
        """The binding of a scope (unbound: no user id or origin)."""
        targets = self._memory_config().get("syncTargets")
        entry = targets.get(scope_key_digest(scope_key)) if isinstance(targets, dict) else None
        if not isinstance(entry, dict):
            return Target(None, None, self.enabled())
        user = entry.get("userId")
        origin = entry.get("origin")
        return Target(
            user if isinstance(user, str) else None,
            origin if isinstance(origin, str) else None,
            entry.get("enabled", True) is not False and self.enabled(),
        )

    def bind(self, scope_key: str, user_id: str, origin: str) -> None:
        """Bind a scope to the account and origin it first synced with."""

        def change(config: dict[str, Any]) -> None:
            targets = config.setdefault("syncTargets", {})
            targets[scope_key_digest(scope_key)] = {
                "userId": user_id,
                "origin": origin,
                "enabled": config.get("syncEnabled", True) is not False,
            }

        self._update(change)

    def unbind(self, scope_key: str) -> bool:
        """Remove a scope's binding; True if there was one."""
        found = False

        def change(config: dict[str, Any]) -> None:
            nonlocal found
            targets = config.get("syncTargets")
            if isinstance(targets, dict):
                found = targets.pop(scope_key_digest(scope_key), None) is not None

        self._update(change)
        return found
