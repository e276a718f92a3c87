"""Turn a storage URL (the value of ``OHARNESS_SYNC_STORAGE``) into an object store.

Accepted forms:

- ``file:///srv/oharness`` — a directory (:class:`~oharness.storage.file.FileObjectStore`).
  Everything after ``file://`` is the path, taken literally (no percent-decoding, no host part):
  ``file:///srv/x`` is the absolute ``/srv/x``, ``file://data/sync`` is ``data/sync`` relative to
  the working directory, and ``file://~/sync`` starts at ``HOME`` from the given environment.
- a bare path (``/srv/oharness``, ``./sync-data``, ``~/sync``) — the same as ``file://`` + path.
- ``s3://BUCKET`` or ``s3://BUCKET/PREFIX`` — an S3 bucket (:class:`~oharness.storage.s3.
  S3ObjectStore`), endpoint and keys from the standard AWS variables of the given environment.
- ``memory://`` — an in-process store (:class:`~oharness.storage.in_memory.MemoryObjectStore`),
  empty at start and lost at exit: for tests and demos only.

The environment is passed in, never read here, so callers decide what it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from oharness.errors import ConfigError, ValidationError
from oharness.storage.file import FileObjectStore
from oharness.storage.in_memory import MemoryObjectStore
from oharness.storage.object_store import ObjectStore
from oharness.storage.validation import validate_key

__all__ = ["STORAGE_VARIABLE", "open_object_store"]

STORAGE_VARIABLE: Final = "OHARNESS_SYNC_STORAGE"
ACCEPTED_FORMS: Final = (
    "file:///absolute/path, an absolute or relative directory path, "
    "s3://BUCKET or s3://BUCKET/PREFIX, or memory://"
)
#: S3 bucket names: 3-63 characters, lowercase letters, digits, '.', '-' (R2 and MinIO agree)
_BUCKET_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_SCHEME_PATTERN: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", re.DOTALL)


def open_object_store(url: str, environ: Mapping[str, str]) -> ObjectStore:
    """The object store ``url`` names; :class:`ConfigError` says what is wrong otherwise."""
    text = url.strip()
    if not text:
        raise _config_error(url, "it is empty")
    match = _SCHEME_PATTERN.fullmatch(text)
    if match is None:
        if ":" in text.split("/", 1)[0] and not text.startswith((".", "/", "~")):
            raise _config_error(url, "it looks like a URL but has no '://'")
        return FileObjectStore(_directory(text, url, environ))
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme == "file":
        if not rest:
            raise _config_error(url, "it names no directory")
        return FileObjectStore(_directory(rest, url, environ))
    if scheme == "s3":
        return _s3_store(rest, url, environ)
    if scheme == "memory":
        if rest.strip("/"):
            raise _config_error(url, "memory:// takes nothing after '//'")
        return MemoryObjectStore()
    raise _config_error(url, f"the scheme {scheme!r} is not supported")


def _directory(text: str, url: str, environ: Mapping[str, str]) -> Path:
    if "\x00" in text:
        raise _config_error(url, "the path contains a NUL character")
    if text == "~" or text.startswith("~/"):
        home = environ.get("HOME")
        if not home:
            raise _config_error(url, "it starts with '~' but HOME is not set")
        return Path(home) / text[2:]
    return Path(text)


def _s3_store(rest: str, url: str, environ: Mapping[str, str]) -> ObjectStore:
    from oharness.storage.s3 import S3ObjectStore, s3_client_from_environment

    if any(char in rest for char in "?#@"):
        raise _config_error(
            url, "s3:// URLs take no credentials, query or fragment (use the AWS_* variables)"
        )
    bucket, _, prefix = rest.partition("/")
    if not _BUCKET_PATTERN.fullmatch(bucket):
        raise _config_error(url, f"{bucket!r} is not a bucket name (3-63 of a-z, 0-9, '.', '-')")
    prefix = prefix.strip("/")
    if prefix:
        try:
            validate_key(prefix)
        except ValidationError as exc:
            raise _config_error(url, f"the prefix is invalid: {exc.message}") from exc
    return S3ObjectStore(bucket, prefix, s3_client_from_environment(environ))


def _config_error(url: str, reason: str) -> ConfigError:
    shown = "(hidden: it contains '@')" if "@" in url else repr(url)
    return ConfigError(
        f"{STORAGE_VARIABLE}={shown} is not a storage location: {reason}. Use {ACCEPTED_FORMS}.",
        key=STORAGE_VARIABLE,
    )
