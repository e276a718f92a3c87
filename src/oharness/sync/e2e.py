"""The keys and the note sealing of end-to-end encrypted sync (issue 31; not wired into sync yet).

Nothing here is hand-made cryptography: every primitive is the ``cryptography`` package's
(scrypt, AES-256-GCM, HKDF-SHA256, HMAC-SHA256). This module only decides how they are put
together:

- **The data key** is 32 random bytes, made once per account. Everything is encrypted under
  keys derived from it, so a passphrase change re-wraps this one key and uploads no note again.
- **The key envelope** holds the data key twice, each copy sealed with AES-256-GCM: once under
  a key derived from the passphrase with scrypt (``n = 2**17, r = 8, p = 1``: 128 MiB and about
  half a second to a second on a laptop core; the parameters and a version are stored with it,
  so they can be raised later), once under the recovery key (32 random bytes shown once to the
  person, as 13 groups of 4 base32 letters, never stored). A wrong passphrase or recovery key
  fails the authentication tag: :class:`WrongKey`, and nothing is decided from garbage.
- **Subkeys** come from the data key with HKDF-SHA256, one per use (``info`` names it): the
  note cipher key and the id key. A key is never used for two things.
- **Opaque ids**: the server sees ``e-`` and 26 base32 letters of HMAC-SHA256(id key, scope key,
  note id) instead of a note id (the same note has the same opaque id on every device, so the
  server's per-note versions and conflicts keep working).
- **A sealed note** is ``version byte | 12-byte nonce | AES-256-GCM(ciphertext + tag)``.
  Its plaintext is the note id and the note file's text, padded to a size bucket (the next power
  of two from 512 bytes), so the server learns a size class, not a size. The associated data is
  the scope key and the opaque id: a ciphertext moved to another note or another scope fails its
  tag, and the id inside is checked against the opaque id it came under. The nonce is
  synthetic: HMAC-SHA256 (a key of its own) over the associated data and the padded plaintext,
  cut to 12 bytes. The same note sealed twice is the same bytes, so a retried upload and two
  devices sealing one merge name one revision; different contents never share a nonce (short of
  a 96-bit collision). What that tells the server — that a note went back to an earlier content —
  its revisions told it already.
- **Scopes** are opaque too: an encrypted account keeps each scope under a project id made like
  a note's opaque id (:meth:`NoteCipher.opaque_scope`), the user scope included, so the server
  cannot tell a repository from its id (a ``git-…`` id names its first commit).

What the server still learns: how many notes a scope has, their size buckets, when they change,
which device changes them, and how many scopes the account has. (See docs/sync-client.md.)
"""

from __future__ import annotations

import base64
import hmac as std_hmac
import json
import os
from dataclasses import dataclass
from typing import Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as crypto_hmac
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from oharness.errors import OHarnessError
from oharness.sync.protocol.sealed import bucket_size

ENVELOPE_VERSION: Final = 1
SEAL_VERSION: Final = 1
#: scrypt's cost: 2**17 blocks of 128 * r bytes (128 MiB), one lane.
SCRYPT_N: Final = 2**17
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
_KEY_BYTES: Final = 32
_NONCE_BYTES: Final = 12
_SALT_BYTES: Final = 16
_AAD_PREFIX: Final = b"oharness-e2e/1\x00"
#: The scope name the markers of sealed scopes are sealed under (no real scope key has it).
_MARKER_SCOPE: Final = "\x00scopes"


class WrongKey(OHarnessError):
    """A passphrase or recovery key that does not open the account's key envelope."""

    code = "wrong_key"


class SealError(OHarnessError):
    """A sealed note that cannot be opened: damaged, moved, or sealed with another key."""

    code = "sealed_note"


@dataclass(frozen=True)
class ScryptParams:
    """The stored cost of the passphrase key (raised later without breaking old envelopes)."""

    salt: bytes
    n: int = SCRYPT_N
    r: int = SCRYPT_R
    p: int = SCRYPT_P

    def derive(self, passphrase: str) -> bytes:
        if not passphrase:
            raise WrongKey("the passphrase is empty: type the account's passphrase")
        kdf = Scrypt(salt=self.salt, length=_KEY_BYTES, n=self.n, r=self.r, p=self.p)
        return kdf.derive(passphrase.encode("utf-8"))


@dataclass(frozen=True)
class KeyEnvelope:
    """The data key, sealed under the passphrase and under the recovery key."""

    kdf: ScryptParams
    by_passphrase: bytes
    by_recovery: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "version": ENVELOPE_VERSION,
            "kdf": {
                "name": "scrypt",
                "salt": _b64(self.kdf.salt),
                "n": self.kdf.n,
                "r": self.kdf.r,
                "p": self.kdf.p,
            },
            "byPassphrase": _b64(self.by_passphrase),
            "byRecovery": _b64(self.by_recovery),
        }

    @classmethod
    def from_json(cls, data: Any) -> KeyEnvelope:
        """Parse a stored envelope; a malformed one is refused with why."""
        try:
            if data["version"] != ENVELOPE_VERSION or data["kdf"]["name"] != "scrypt":
                raise ValueError(f"unknown envelope version {data.get('version')!r}")
            kdf = data["kdf"]
            params = ScryptParams(_unb64(kdf["salt"]), int(kdf["n"]), int(kdf["r"]), int(kdf["p"]))
            return cls(params, _unb64(data["byPassphrase"]), _unb64(data["byRecovery"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise SealError(
                f"the account's key envelope cannot be read ({exc}); it was damaged or written "
                "by a newer release: update oharness, or sign in with the recovery key"
            ) from exc

    def open_with_passphrase(self, passphrase: str) -> bytes:
        """The data key; :class:`WrongKey` for a passphrase that does not open it."""
        try:
            return _open_key(self.kdf.derive(passphrase), self.by_passphrase, b"passphrase")
        except InvalidTag:
            raise WrongKey(
                "wrong passphrase: nothing was changed; type it again, or use the recovery key"
            ) from None

    def open_with_recovery(self, recovery_key: str) -> bytes:
        """The data key; :class:`WrongKey` for a recovery key that does not open it."""
        key = parse_recovery_key(recovery_key)
        try:
            return _open_key(key, self.by_recovery, b"recovery")
        except InvalidTag:
            raise WrongKey(
                "wrong recovery key: nothing was changed; check its 13 groups of 4 letters "
                "and digits"
            ) from None

    def with_passphrase(
        self, data_key: bytes, passphrase: str, *, n: int = SCRYPT_N
    ) -> KeyEnvelope:
        """The same data key under a new passphrase (a new salt, today's cost; the recovery
        copy kept)."""
        params = ScryptParams(os.urandom(_SALT_BYTES), n)
        sealed = _seal_key(params.derive(passphrase), data_key, b"passphrase")
        return KeyEnvelope(params, sealed, self.by_recovery)


@dataclass(frozen=True)
class NewAccountKey:
    """What turning encryption on makes: the data key, its envelope, the recovery key."""

    data_key: bytes
    envelope: KeyEnvelope
    #: Shown once to the person; never stored.
    recovery_key: str


def new_account_key(
    passphrase: str, *, n: int = SCRYPT_N, data_key: bytes | None = None
) -> NewAccountKey:
    """A fresh data key (or ``data_key``) sealed under ``passphrase`` and a fresh recovery key
    (``n``: scrypt's cost, lowered only by tests)."""
    data_key = os.urandom(_KEY_BYTES) if data_key is None else data_key
    recovery = os.urandom(_KEY_BYTES)
    params = ScryptParams(os.urandom(_SALT_BYTES), n)
    envelope = KeyEnvelope(
        params,
        _seal_key(params.derive(passphrase), data_key, b"passphrase"),
        _seal_key(recovery, data_key, b"recovery"),
    )
    return NewAccountKey(data_key, envelope, format_recovery_key(recovery))


def format_recovery_key(raw: bytes) -> str:
    """32 bytes as 13 dash-separated groups of 4 base32 letters (52 letters, no padding)."""
    letters = base64.b32encode(raw).decode("ascii").rstrip("=")
    return "-".join(letters[i : i + 4] for i in range(0, len(letters), 4))


def parse_recovery_key(text: str) -> bytes:
    """The 32 bytes of a recovery key as typed (any case, spaces or dashes between groups)."""
    letters = "".join(ch for ch in text.upper() if ch.isalnum())
    try:
        raw = base64.b32decode(letters + "=" * (-len(letters) % 8))
    except ValueError:
        raw = b""
    if len(raw) != _KEY_BYTES:
        raise WrongKey(
            "that is not a recovery key: it is 13 groups of 4 letters and digits, as shown "
            "when encryption was turned on"
        )
    return raw


class NoteCipher:
    """Seals and opens the notes of one account (one per data key)."""

    def __init__(self, data_key: bytes) -> None:
        if len(data_key) != _KEY_BYTES:
            raise ValueError("a data key is 32 bytes")
        self._aead = AESGCM(_subkey(data_key, b"oharness-e2e/1 note cipher"))
        self._id_key = _subkey(data_key, b"oharness-e2e/1 note id")
        self._nonce_key = _subkey(data_key, b"oharness-e2e/1 note nonce")

    def opaque_id(self, scope_key: str, note_id: str) -> str:
        """The id the server sees for ``note_id`` in ``scope_key`` (the same on every device)."""
        mac = crypto_hmac.HMAC(self._id_key, hashes.SHA256())
        mac.update(_frame(scope_key, note_id))
        digest = base64.b32encode(mac.finalize()).decode("ascii").lower()
        return "e-" + digest[:26]

    def opaque_scope(self, scope_key: str) -> str:
        """The project id the server sees for a scope (``user`` or a project id)."""
        return self.opaque_id("\x00scope", scope_key)

    def scope_marker(self, scope_key: str) -> tuple[str, bytes]:
        """The note that names a sealed scope inside it: its opaque id and sealed content.

        A scope's opaque id cannot be turned back into its name; turning encryption off needs
        the name of every scope (other machines' projects too), so each sealed scope holds
        its name sealed under the opaque scope id (:meth:`open_scope_marker`)."""
        opaque_scope = self.opaque_scope(scope_key)
        marker = self.opaque_id(_MARKER_SCOPE, opaque_scope)
        return marker, self.seal(_MARKER_SCOPE, opaque_scope, scope_key)

    def scope_marker_id(self, opaque_scope: str) -> str:
        """The opaque id of the marker note in the sealed scope ``opaque_scope``."""
        return self.opaque_id(_MARKER_SCOPE, opaque_scope)

    def open_scope_marker(self, opaque_scope: str, sealed: bytes) -> str:
        """The scope key a sealed scope's marker names (:class:`SealError` if it does not
        open or names another scope)."""
        named, scope_key = self.open(_MARKER_SCOPE, self.scope_marker_id(opaque_scope), sealed)
        if named != opaque_scope or self.opaque_scope(scope_key) != opaque_scope:
            raise SealError(f"the marker of scope {opaque_scope} names another scope")
        return scope_key

    def seal(self, scope_key: str, note_id: str, text: str) -> bytes:
        """The note file's ``text``, sealed under its scope and opaque id, padded to a bucket."""
        plain = json.dumps({"id": note_id, "text": text}, ensure_ascii=False).encode("utf-8")
        padded = _pad(plain)
        aad = _AAD_PREFIX + _frame(scope_key, self.opaque_id(scope_key, note_id))
        # A synthetic nonce (SIV-style): keyed by the content, so the same note sealed twice
        # gives the same bytes (a retried upload names the same revision on every device),
        # and two different contents never share a nonce.
        mac = crypto_hmac.HMAC(self._nonce_key, hashes.SHA256())
        mac.update(aad + padded)
        nonce = mac.finalize()[:_NONCE_BYTES]
        return bytes([SEAL_VERSION]) + nonce + self._aead.encrypt(nonce, padded, aad)

    def open(self, scope_key: str, opaque_id: str, sealed: bytes) -> tuple[str, str]:
        """``(note id, text)`` of a note sealed under ``scope_key`` and ``opaque_id``."""
        if len(sealed) < 1 + _NONCE_BYTES + 16 or sealed[0] != SEAL_VERSION:
            raise SealError(f"note {opaque_id}: not a sealed note of a version this release reads")
        nonce, body = sealed[1 : 1 + _NONCE_BYTES], sealed[1 + _NONCE_BYTES :]
        aad = _AAD_PREFIX + _frame(scope_key, opaque_id)
        try:
            plain = _unpad(self._aead.decrypt(nonce, body, aad))
            data = json.loads(plain)
            note_id, text = data["id"], data["text"]
        except InvalidTag:
            raise SealError(
                f"note {opaque_id} does not open with this account's key: it was damaged, moved "
                "from another note or scope, or sealed with another key; it is left as it is"
            ) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise SealError(f"note {opaque_id}: its sealed content is malformed ({exc})") from exc
        if not isinstance(note_id, str) or not isinstance(text, str):
            raise SealError(f"note {opaque_id}: its sealed content is malformed")
        if not std_hmac.compare_digest(self.opaque_id(scope_key, note_id), opaque_id):
            raise SealError(f"note {opaque_id} holds another note's content; it is left as it is")
        return note_id, text


def _pad(plain: bytes) -> bytes:
    size = bucket_size(len(plain))
    return len(plain).to_bytes(4, "big") + plain + bytes(size - 4 - len(plain))


def _unpad(padded: bytes) -> bytes:
    length = int.from_bytes(padded[:4], "big")
    if length > len(padded) - 4 or any(padded[4 + length :]):
        raise ValueError("bad padding")
    return padded[4 : 4 + length]


def _frame(*parts: str) -> bytes:
    """Length-prefixed parts, so no two different part lists give the same bytes."""
    out = bytearray()
    for part in parts:
        data = part.encode("utf-8")
        out += len(data).to_bytes(4, "big") + data
    return bytes(out)


def _subkey(data_key: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=_KEY_BYTES, salt=None, info=info).derive(data_key)


def _seal_key(wrapping_key: bytes, data_key: bytes, purpose: bytes) -> bytes:
    nonce = os.urandom(_NONCE_BYTES)
    aad = _AAD_PREFIX + b"data key by " + purpose
    return nonce + AESGCM(wrapping_key).encrypt(nonce, data_key, aad)


def _open_key(wrapping_key: bytes, sealed: bytes, purpose: bytes) -> bytes:
    nonce, body = sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:]
    aad = _AAD_PREFIX + b"data key by " + purpose
    return AESGCM(wrapping_key).decrypt(nonce, body, aad)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise ValueError("expected base64 text")
    return base64.b64decode(text, validate=True)
