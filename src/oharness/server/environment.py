"""The server's edge: build the app from an environment mapping (``OHARNESS_SYNC_*``).

The caller passes the environment (the CLI passes ``os.environ``); the files it names (the
entitlements file, a public key given as a path) are read here. A missing or broken storage
configuration fails here, at startup, with a :class:`~oharness.errors.ConfigError` saying what
to fix, never on the first request.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from starlette.applications import Starlette

from oharness.errors import ConfigError, OHarnessError
from oharness.server.app import create_app
from oharness.server.config import ServerSettings, settings_from_environ
from oharness.storage.object_store import ObjectStore
from oharness.storage.url import STORAGE_VARIABLE, open_object_store


def _read_text(path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}", file=path) from exc


def settings_from_environment(environ: Mapping[str, str]) -> ServerSettings:
    """Settings from ``environ``, reading the files it names."""
    return settings_from_environ(environ, _read_text)


def open_store_from_environment(environ: Mapping[str, str]) -> ObjectStore:
    """The object store ``OHARNESS_SYNC_STORAGE`` names, checked to answer."""
    url = environ.get(STORAGE_VARIABLE, "").strip()
    if not url:
        raise ConfigError(
            f"{STORAGE_VARIABLE} is not set: give the storage location, e.g. "
            "file:///srv/oharness or s3://bucket/prefix",
            key=STORAGE_VARIABLE,
        )
    store = open_object_store(url, environ)
    try:
        store.ping()
    except OHarnessError as exc:
        raise ConfigError(
            f"the storage at {STORAGE_VARIABLE} does not answer: {exc.message}",
            key=STORAGE_VARIABLE,
        ) from exc
    return store


def create_app_from_env(environ: Mapping[str, str]) -> Starlette:
    """The sync server configured by ``environ`` (settings first, then storage)."""
    settings = settings_from_environment(environ)
    store = open_store_from_environment(environ)
    return create_app(store, settings)
