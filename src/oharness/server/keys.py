"""An account's key envelope and what it changes (end-to-end encrypted sync, issue 31).

The envelope is made and opened on the clients (:mod:`oharness.sync.e2e`): the server keeps
it as an opaque JSON object at ``users/<user>/keys.json`` with a version, replaced only by a
writer that read the current version (compare-and-swap on the object's ETag). While an account
holds one, it is end-to-end encrypted: identity says so, and its plain scopes (the user scope,
a project under a readable id) are refused with ``encrypted_account``, so a device without the
key never uploads a readable note into the account nor reads an old one. Turning encryption
off stores ``null`` (the version keeps growing). An erase of the account removes the envelope
with everything else under the account's prefix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from oharness.errors import PreconditionFailed
from oharness.server.responses import SyncApiError
from oharness.storage.object_store import ObjectStore
from oharness.sync.protocol import SyncScope, manifest_key, scope_prefix, user_prefix
from oharness.sync.protocol.sealed import is_opaque_id

#: An envelope holds two sealed 32-byte keys and a few parameters: far below this.
MAX_ENVELOPE_BYTES: Final = 16 * 1024


@dataclass(frozen=True)
class StoredKeys:
    """The envelope (``None``: none), its version (0: never stored) and the object's ETag."""

    envelope: dict[str, Any] | None
    version: int
    etag: str | None


def keys_key(segment: str) -> str:
    """Where an account's envelope lives."""
    return user_prefix(segment) + "keys.json"


def read_keys(store: ObjectStore, segment: str) -> StoredKeys:
    """The account's stored envelope (an unreadable object reads as a damaged storage)."""
    stored = store.get(keys_key(segment))
    if stored is None:
        return StoredKeys(None, 0, None)
    try:
        data = json.loads(stored.data)
        envelope, version = data["envelope"], data["version"]
    except (ValueError, KeyError, TypeError):
        raise SyncApiError(
            "unavailable", "the account's key envelope could not be read: retry later"
        ) from None
    if not isinstance(version, int) or not (envelope is None or isinstance(envelope, dict)):
        raise SyncApiError(
            "unavailable", "the account's key envelope could not be read: retry later"
        )
    return StoredKeys(envelope, version, stored.etag)


def write_keys(
    store: ObjectStore, segment: str, envelope: dict[str, Any] | None, base_version: int
) -> StoredKeys:
    """Store ``envelope`` if the stored one is at ``base_version``; 409 ``conflict`` if not."""
    current = read_keys(store, segment)
    if current.version != base_version:
        raise _changed(current.version)
    data = json.dumps(
        {"envelope": envelope, "version": current.version + 1},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8")
    if len(data) > MAX_ENVELOPE_BYTES:
        raise SyncApiError(
            "too_large", f"a key envelope is at most {MAX_ENVELOPE_BYTES} bytes of JSON"
        )
    try:
        etag = store.put(
            keys_key(segment),
            data,
            if_match=current.etag,
            if_none_match=current.etag is None,
        )
    except PreconditionFailed:
        raise _changed(read_keys(store, segment).version) from None
    return StoredKeys(envelope, current.version + 1, etag)


def check_scope_allowed(store: ObjectStore, segment: str, scope: SyncScope) -> None:
    """Refuse a plain scope of an encrypted account (409 ``encrypted_account``)."""
    if scope.kind == "project" and is_opaque_id(scope.project_id):
        return
    if read_keys(store, segment).envelope is not None:
        raise SyncApiError(
            "encrypted_account",
            "this account is end-to-end encrypted: enter the passphrase on this device "
            "('oharness sync unlock') before it syncs",
        )


def account_scopes(store: ObjectStore, segment: str) -> tuple[SyncScope, ...]:
    """Every scope of the account that has a manifest: the user scope first, then projects."""
    found: list[SyncScope] = []
    if store.get(manifest_key(scope_prefix(segment, SyncScope("user")))) is not None:
        found.append(SyncScope("user"))
    projects = user_prefix(segment) + "projects/"
    for key in store.list(projects):
        project_id, _, rest = key[len(projects) :].partition("/")
        if rest == "memory/manifest.json":
            found.append(SyncScope("project", project_id))
    return tuple(found)


def _changed(version: int) -> SyncApiError:
    return SyncApiError(
        "conflict",
        "the key envelope changed on another device since this one read it: read it again",
        version=version,
    )
