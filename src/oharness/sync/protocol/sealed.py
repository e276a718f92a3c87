"""Sealed notes on the wire: what an end-to-end encrypted account sends instead of note files.

An encrypted account keeps its notes in scopes the server knows only by an opaque id
(``e-`` and 26 base32 letters: a keyed hash made on the client), each note under an opaque id
of the same shape, its content the text :data:`SEALED_PREFIX` followed by the sealed bytes in
unpadded base64url (:mod:`oharness.sync.e2e` makes them). The server never parses such
content: it stores it, names its revision and hash after those bytes, and counts it against
the quotas by its length. Plain note files and sealed ones never share a scope: a scope with an
opaque id takes only sealed content, any other only note files.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

SEALED_PREFIX: Final = "oharness-sealed/1:"
#: What sealing adds to the padded plaintext: a version byte, a 12-byte nonce, a 16-byte tag.
SEAL_OVERHEAD: Final = 1 + 12 + 16
#: The smallest padding bucket: every sealed note is at least this long before sealing.
MIN_BUCKET: Final = 512
#: An opaque id: a note's or a scope's, in an end-to-end encrypted account.
OPAQUE_ID_PATTERN: Final = re.compile(r"e-[a-z2-7]{26}")
_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]*")


def bucket_size(length: int) -> int:
    """The padded size of a plaintext of ``length`` bytes (4 more for its length prefix):
    the next power of two from :data:`MIN_BUCKET`, so a size says only its size class."""
    size = MIN_BUCKET
    while size < length + 4:
        size *= 2
    return size


def is_opaque_id(value: str | None) -> bool:
    """Whether ``value`` has the shape of an opaque id."""
    return value is not None and OPAQUE_ID_PATTERN.fullmatch(value) is not None


def is_sealed(content: str) -> bool:
    """Whether ``content`` is sealed (it may still be malformed: :func:`sealed_bytes`)."""
    return content.startswith(SEALED_PREFIX)


def sealed_text(data: bytes) -> str:
    """The wire text of sealed bytes."""
    return SEALED_PREFIX + base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def sealed_bytes(content: str) -> bytes | None:
    """The sealed bytes of wire text, or None when it is not well-formed sealed content."""
    if not is_sealed(content):
        return None
    encoded = content[len(SEALED_PREFIX) :]
    if not _BASE64URL.fullmatch(encoded) or len(encoded) % 4 == 1:
        return None
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        return None
