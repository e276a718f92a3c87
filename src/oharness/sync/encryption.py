"""Turning end-to-end encryption on, joining an encrypted account, changing the passphrase
(issue 31): what ``oharness sync encrypt|unlock|passphrase`` do.

This device keeps the account's data key in ``$OHARNESS_HOME/e2e-key.json`` (0600, the same
trust as the token beside it in ``credentials.json``), with the origin and account it belongs
to. While it holds the key, every sync pass goes through
:class:`~oharness.sync.sealed_client.SealedClient`; without it, a pass of an encrypted account
is paused with "enter the passphrase" and uploads nothing.

Turning it on migrates what the server holds, in an order where an interruption loses nothing:

1. the key is made and kept here as *pending* (a second run reuses it);
2. every plain scope of the account is read whole (``GET /v1/memory/scopes``, a full listing
   with every body) and copied, sealed, into its sealed scope (a note already there is
   updated from its current revision: a second run completes the first);
3. the key envelope is stored (from here on the server refuses the plain scopes);
4. the plain scopes are erased from the server, and the key here becomes *active*.

Local notes are never touched. A note another device wrote between 2 and 3 is refused to it
afterwards and stays on that device until it is unlocked there, then it is uploaded sealed.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from oharness.errors import OHarnessError, SyncError, ValidationError
from oharness.fsio import atomic_write
from oharness.project.paths import HomeLayout
from oharness.sync.client import SyncClient
from oharness.sync.protocol import (
    Change,
    CommitRequest,
    SnapshotRequest,
    SnapshotResponse,
    SyncScope,
)
from oharness.sync.protocol.sealed import is_opaque_id
from oharness.sync.sealed_client import SealedClient

if TYPE_CHECKING:  # cryptography loads only when a key is used, not for every sync import
    from oharness.sync.sealed_client import SealedClient

KEY_FILE: Final = "e2e-key.json"
#: In the sync folder: this device, without the key, was told the account is encrypted.
SEEN_FILE: Final = "encrypted-account.json"
#: Puts per migration commit (well under every server's maxChangesPerCommit).
_BATCH: Final = 100
_MIN_PASSPHRASE: Final = 10
LOSS_WARNING: Final = (
    "If you lose both the passphrase and the recovery key, the cloud copy of your notes cannot "
    "be read by anyone, you included; the notes on your machines stay as they are."
)


@dataclass(frozen=True)
class DeviceKey:
    """The data key this device holds for one account."""

    origin: str
    user_id: str
    data_key: bytes
    active: bool
    #: The account's key envelope as last seen here (the data key sealed under the passphrase
    #: and the recovery key: nothing it holds opens without them), put back on the server if
    #: a storage reset or restore lost it.
    envelope: dict[str, Any] | None = None


def key_path(home: HomeLayout) -> Path:
    return home.home / KEY_FILE


def seen_path(home: HomeLayout) -> Path:
    """Where a device without the key notes that an account was end-to-end encrypted."""
    return home.sync_dir / SEEN_FILE


def seen_encrypted(home: HomeLayout, origin: str, user_id: str) -> bool:
    """Whether this device, without the key, was refused as the account is encrypted."""
    try:
        data = json.loads(seen_path(home).read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and (data.get("origin"), data.get("userId")) == (
        origin,
        user_id,
    )


def note_seen_encrypted(home: HomeLayout, origin: str, user_id: str, seen: bool) -> None:
    """Record (or, with ``seen`` false, forget) that the account was seen encrypted here."""
    path = seen_path(home)
    if not seen:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    if seen_encrypted(home, origin, user_id):
        return
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = json.dumps({"origin": origin, "userId": user_id}).encode("utf-8")
    atomic_write(path, data, mode=0o600)


def load_key(home: HomeLayout) -> DeviceKey | None:
    """The key this device holds, if any (a damaged file reads as none: unlock again)."""
    try:
        data = json.loads(key_path(home).read_bytes())
        raw = base64.b64decode(data["dataKey"], validate=True)
        envelope = data.get("envelope")
        key = DeviceKey(
            str(data["origin"]),
            str(data["userId"]),
            raw,
            data["state"] == "active",
            envelope if isinstance(envelope, dict) else None,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return key if len(key.data_key) == 32 else None


def save_key(home: HomeLayout, key: DeviceKey) -> None:
    data = {
        "origin": key.origin,
        "userId": key.user_id,
        "dataKey": base64.b64encode(key.data_key).decode("ascii"),
        "state": "active" if key.active else "pending",
        "envelope": key.envelope,
    }
    home.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write(key_path(home), json.dumps(data).encode("utf-8"), mode=0o600)


def forget_key(home: HomeLayout) -> bool:
    try:
        os.unlink(key_path(home))
    except FileNotFoundError:
        return False
    return True


def check_passphrase(passphrase: str) -> None:
    """Refuse a passphrase too short to resist guessing once the envelope is known."""
    if len(passphrase) < _MIN_PASSPHRASE:
        raise ValidationError(
            f"the passphrase is under {_MIN_PASSPHRASE} characters: choose a longer one (a few "
            "words are easier to remember than symbols)",
            field="passphrase",
        )


@dataclass(frozen=True)
class TurnedOn:
    """What ``oharness sync encrypt`` did."""

    recovery_key: str | None
    scopes: int
    notes: int
    erased: int


def turn_on(
    home: HomeLayout,
    client: SyncClient,
    passphrase: str,
    *,
    show_recovery: Callable[[str], None],
    n: int | None = None,
) -> TurnedOn:
    """Make the account end-to-end encrypted and migrate its notes (see the module notes).

    ``show_recovery`` is given the recovery key before the envelope is stored, so a run cut
    off after storing it has shown the key already.
    """
    from oharness.sync.e2e import SCRYPT_N, NoteCipher, new_account_key
    from oharness.sync.sealed_client import SealedClient

    check_passphrase(passphrase)
    identity = client.identity()
    stored = client.keys()
    held = load_key(home)
    ours = held is not None and held.user_id == identity.user_id and held.origin == client.origin
    if stored.envelope is not None and not ours:
        raise ValidationError(
            "this account is already end-to-end encrypted: 'oharness sync unlock' enters the "
            "passphrase on this device"
        )
    if held is not None and ours and stored.envelope is not None and not held.active:
        _check_second_run(home, stored.envelope, passphrase, held)
    if held is not None and ours:
        data_key = held.data_key  # a second run: the key of the first
    else:
        data_key = os.urandom(32)
        save_key(home, DeviceKey(client.origin, identity.user_id, data_key, active=False))
    cipher = NoteCipher(data_key)
    plain = [scope for scope in client.scopes().scopes if not _sealed(scope)]
    copied = 0
    recovery: str | None = None
    if stored.envelope is None:
        sealed = SealedClient(client.origin, client.token, cipher, http=client.http, migrating=True)
        for scope in plain:
            copied += _copy_sealed(client, sealed, scope)
        made = new_account_key(passphrase, n=n or SCRYPT_N, data_key=data_key)
        recovery = made.recovery_key
        show_recovery(recovery)
        envelope = made.envelope.to_json()
        try:
            client.put_keys(envelope, stored.version)
        except SyncError as exc:
            if exc.code != "conflict":
                raise
            # Another machine turned it on at the same moment: its key is the account's.
            held = load_key(home)
            assert held is not None
            _check_second_run(home, client.keys().envelope or {}, passphrase, held)
            raise
    else:
        envelope = stored.envelope
    erased = sum(client.erase_scope(scope).deleted for scope in plain)
    save_key(home, DeviceKey(client.origin, identity.user_id, data_key, True, envelope))
    return TurnedOn(recovery, len(plain), copied, erased)


def _check_second_run(
    home: HomeLayout, envelope: dict[str, Any], passphrase: str, held: DeviceKey
) -> None:
    """A key made here by a run that did not finish, and an envelope on the server: a second
    run finds the envelope its first run stored; one another machine stored (two machines
    turned it on at once) seals another key, which this machine must join instead."""
    from oharness.sync.e2e import KeyEnvelope

    try:
        opened = KeyEnvelope.from_json(envelope).open_with_passphrase(passphrase)
    except OHarnessError:
        opened = None
    if opened != held.data_key:
        forget_key(home)
        raise ValidationError(
            "the account was end-to-end encrypted by another run meanwhile (on another "
            "machine, or here with another passphrase): enter its passphrase with 'oharness "
            "sync unlock'; nothing here changed"
        )


def _sealed(scope: SyncScope) -> bool:
    return scope.kind == "project" and is_opaque_id(scope.project_id)


def _copy_sealed(client: SyncClient, sealed: SealedClient, scope: SyncScope) -> int:
    """Every live note of a plain scope, put into its sealed scope; how many."""
    return _put_all(
        sealed,
        scope,
        _live_files(client, scope),
        "nothing was turned on: run 'oharness sync encrypt' again",
    )


def _live_files(client: SyncClient, scope: SyncScope) -> dict[str, str]:
    """Every live note of ``scope`` through ``client`` (sealed or not): note id -> file text."""
    listing = client.snapshot(SnapshotRequest(scope))
    bodies = _bodies(client, scope, listing, [entry.rev for entry in listing.notes])
    return {entry.id: bodies[entry.rev] for entry in listing.notes}


def _bodies(
    client: SyncClient, scope: SyncScope, listing: SnapshotResponse, revs: list[str]
) -> dict[str, str]:
    """The bodies of ``revs`` of ``listing``: those it carried, the rest asked for."""
    bodies = {rev: text for rev, text in listing.objects.items() if rev in revs}
    missing = [rev for rev in revs if rev not in bodies]
    while missing:
        more = client.snapshot(SnapshotRequest(scope, since=listing.version, want=tuple(missing)))
        if not more.objects:
            raise SyncError(
                "the server kept notes back while they were moved; run the command again",
                code="unavailable",
            )
        bodies.update(more.objects)
        missing = [rev for rev in missing if rev not in bodies]
    return bodies


@dataclass(frozen=True)
class TurnedOff:
    """What ``oharness sync encrypt --off`` did."""

    scopes: int
    notes: int
    #: Sealed scopes whose name could not be read (left on the server, untouched).
    unnamed: int
    forgot_key: bool


def turn_off(home: HomeLayout, client: SyncClient) -> TurnedOff:
    """Upload every sealed note in clear and turn end-to-end encryption off (the person has
    confirmed); on a machine where it was already turned off, forget the key.

    The order keeps every note readable somewhere: every sealed scope is read whole first
    (its name from its marker), then the envelope is removed (the server takes plain scopes
    again), the notes are put in clear, and only then are the sealed scopes erased and the key
    forgotten. Run again after an interruption, it finishes the job.
    """
    from oharness.sync.e2e import NoteCipher
    from oharness.sync.protocol.sealed import sealed_bytes
    from oharness.sync.sealed_client import SealedClient

    held = load_key(home)
    stored = client.keys()
    if held is None or not held.active:
        if stored.envelope is not None:
            raise ValidationError(
                "this machine does not hold the account's key: 'oharness sync unlock' first "
                "(the notes must be read to be uploaded in clear)"
            )
        user_id = client.identity().user_id
        if stored.version == 0 and seen_encrypted(home, client.origin, user_id):
            # The storage lost the envelope and no machine put it back: recorded as turned
            # off, so this machine (and every other) syncs in clear on purpose.
            client.put_keys(None, 0)
            note_seen_encrypted(home, client.origin, user_id, seen=False)
        return TurnedOff(0, 0, 0, forget_key(home))
    cipher = NoteCipher(held.data_key)
    sealed = SealedClient(client.origin, client.token, cipher, http=client.http, migrating=True)
    named: list[tuple[SyncScope, SyncScope, dict[str, str]]] = []  # sealed, plain, files
    unnamed = 0
    for scope in client.scopes().scopes:
        if not _sealed(scope):
            continue
        opaque = scope.project_id or ""
        marker = cipher.scope_marker_id(opaque)
        listing = client.snapshot(SnapshotRequest(scope))
        entry = next((e for e in listing.notes if e.id == marker), None)
        text = None if entry is None else _bodies(client, scope, listing, [entry.rev])[entry.rev]
        raw = None if text is None else sealed_bytes(text)
        try:
            key = None if raw is None else cipher.open_scope_marker(opaque, raw)
        except OHarnessError:
            key = None
        if key is None:
            unnamed += 1
            continue
        plain = SyncScope("user") if key == "user" else SyncScope("project", key[8:])
        named.append((scope, plain, _live_files(sealed, plain)))
    if stored.envelope is not None or stored.version == 0:  # 0: lost in a storage reset
        client.put_keys(None, stored.version)  # recorded as off: no machine puts it back
    notes = 0
    for _, plain, files in named:
        notes += _put_all(
            client,
            plain,
            files,
            "run the command again: the sealed copies are kept until every note is back",
        )
    for scope, _, _ in named:
        client.erase_scope(scope)
    forgot = forget_key(home) if unnamed == 0 else False
    return TurnedOff(len(named), notes, unnamed, forgot)


def _put_all(client: SyncClient, scope: SyncScope, files: dict[str, str], retry: str) -> int:
    """Put ``files`` (note id -> file text) into ``scope`` through ``client`` (sealed or not),
    updating what a first run already put; ``retry`` says what to do when one is refused."""
    current = {entry.id: entry.rev for entry in client.snapshot(SnapshotRequest(scope)).notes}
    changes = [
        Change("put", note_id, current.get(note_id), text) for note_id, text in files.items()
    ]
    for start in range(0, len(changes), _BATCH):
        answer = client.commit(CommitRequest(scope, tuple(changes[start : start + _BATCH])))
        if answer.rejected:
            first = answer.rejected[0]
            raise SyncError(
                f"note {first.id} could not be moved ({first.message}); {retry}",
                code="invalid_request",
            )
    return len(changes)


def unlock(
    home: HomeLayout, client: SyncClient, *, passphrase: str | None, recovery_key: str | None
) -> DeviceKey:
    """Enter the passphrase (or the recovery key) on this device; a wrong one changes nothing."""
    from oharness.sync.e2e import KeyEnvelope

    identity = client.identity()
    stored = client.keys()
    if stored.envelope is None:
        raise ValidationError("this account is not end-to-end encrypted: nothing to unlock")
    envelope = KeyEnvelope.from_json(stored.envelope)
    if recovery_key is not None:
        data_key = envelope.open_with_recovery(recovery_key)
    else:
        data_key = envelope.open_with_passphrase(passphrase or "")
    key = DeviceKey(client.origin, identity.user_id, data_key, True, stored.envelope)
    save_key(home, key)
    note_seen_encrypted(home, client.origin, identity.user_id, seen=False)
    return key


def change_passphrase(
    home: HomeLayout, client: SyncClient, new_passphrase: str, *, n: int | None = None
) -> None:
    """Seal the account's key under a new passphrase (no note is uploaded again)."""
    from oharness.sync.e2e import SCRYPT_N, KeyEnvelope

    check_passphrase(new_passphrase)
    held = load_key(home)
    if held is None or not held.active:
        raise ValidationError(
            "this device does not hold the account's key: 'oharness sync unlock' first"
        )
    stored = client.keys()
    if stored.envelope is None:
        raise ValidationError("this account is not end-to-end encrypted")
    envelope = KeyEnvelope.from_json(stored.envelope).with_passphrase(
        held.data_key, new_passphrase, n=n or SCRYPT_N
    )
    client.put_keys(envelope.to_json(), stored.version)
    save_key(home, dataclasses.replace(held, envelope=envelope.to_json()))


def put_back(sealed: SealedClient, envelope: dict[str, Any]) -> None:
    """Put the account's key envelope back on a server that lost it (a storage reset, or a
    restore from before it was stored), with the key this device holds.

    A device without the key that synced meanwhile found a plain account and uploaded its notes
    in clear: those the sealed scope lacks are copied into it, sealed (created only: a note the
    sealed scope holds keeps its sealed version, and that device merges its own once it is
    unlocked), the envelope is stored (from here that device is refused again), and the plain
    scopes are erased. A 409 ``conflict``: another device put it back first.
    """
    plain_client = SyncClient(sealed.origin, sealed.token, http=sealed.http)
    copier = SealedClient(
        sealed.origin, sealed.token, sealed.cipher, http=sealed.http, migrating=True
    )
    plain = [scope for scope in plain_client.scopes().scopes if not _sealed(scope)]
    for scope in plain:
        held = {entry.id for entry in copier.snapshot(SnapshotRequest(scope)).notes}
        files = _live_files(plain_client, scope)
        _put_all(
            copier,
            scope,
            {note_id: text for note_id, text in files.items() if note_id not in held},
            "the next pass tries again",
        )
    sealed.put_keys(envelope, 0)
    for scope in plain:
        plain_client.erase_scope(scope)


def account_client(home: HomeLayout, environ_token: str | None) -> SyncClient:
    """A plain client of the signed-in account (its key envelope and scopes); close it."""
    from oharness.sync.settings_file import SyncSettingsFile

    settings = SyncSettingsFile(home)
    origin, token = settings.origin(), settings.token(environ_token)
    if not origin or not token:
        raise ValidationError("not signed in: run 'oharness login --origin URL' first")
    return SyncClient(origin, token)


def sealed_client_for(home: HomeLayout, origin: str, token: str, **kwargs: object) -> SyncClient:
    """The client a sync pass uses: sealed while this device holds the account's key."""
    held = load_key(home)
    if held is None or not held.active or held.origin != origin:
        return SyncClient(origin, token, **kwargs)  # type: ignore[arg-type]
    from oharness.sync.e2e import NoteCipher
    from oharness.sync.sealed_client import SealedClient

    return SealedClient(
        origin,
        token,
        NoteCipher(held.data_key),
        maps_dir=home.sync_dir / "sealed",
        envelope=held.envelope,
        put_back=put_back,
        **kwargs,  # type: ignore[arg-type]
    )
