"""The keys and note sealing of end-to-end encrypted sync: the envelope opens with the
passphrase or the recovery key and nothing else, a passphrase change keeps the data key, a
sealed note hides its id, text and size and cannot be moved to another note or scope."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from oharness.sync.e2e import (
    SCRYPT_N,
    KeyEnvelope,
    NoteCipher,
    ScryptParams,
    SealError,
    WrongKey,
    new_account_key,
    parse_recovery_key,
)
from oharness.sync.protocol.sealed import bucket_size

CHEAP = 2**10  # scrypt's cost in these tests (the real one is measured on its own below)
NOTE = '---\n{"id": "deploy-day-1a2", "summary": "Deploys go out on Tuesdays"}\n---\nAt noon.\n'


def test_the_envelope_opens_with_the_passphrase_or_the_recovery_key_only() -> None:
    made = new_account_key("correct horse battery staple", n=CHEAP)
    stored = json.loads(json.dumps(made.envelope.to_json()))  # as kept on the server
    envelope = KeyEnvelope.from_json(stored)
    assert envelope.open_with_passphrase("correct horse battery staple") == made.data_key
    assert envelope.open_with_recovery(made.recovery_key) == made.data_key
    assert envelope.open_with_recovery(made.recovery_key.lower().replace("-", " ")) == made.data_key
    with pytest.raises(WrongKey, match="wrong passphrase: nothing was changed"):
        envelope.open_with_passphrase("correct horse battery stapler")
    other = new_account_key("x", n=CHEAP).recovery_key
    with pytest.raises(WrongKey, match="wrong recovery key"):
        envelope.open_with_recovery(other)
    with pytest.raises(WrongKey, match="not a recovery key"):
        envelope.open_with_recovery("ABCD-EFGH")
    with pytest.raises(WrongKey, match="empty"):
        envelope.open_with_passphrase("")
    assert "correct horse" not in json.dumps(stored)
    assert made.data_key.hex() not in json.dumps(stored)


def test_a_new_passphrase_rewraps_the_same_data_key() -> None:
    made = new_account_key("old passphrase", n=CHEAP)
    changed = made.envelope.with_passphrase(made.data_key, "new passphrase", n=CHEAP)
    assert changed.open_with_passphrase("new passphrase") == made.data_key
    assert changed.open_with_recovery(made.recovery_key) == made.data_key
    with pytest.raises(WrongKey):
        changed.open_with_passphrase("old passphrase")


def test_a_damaged_envelope_is_refused_with_the_way_out() -> None:
    good = new_account_key("p", n=CHEAP).envelope.to_json()
    broken: Any
    for broken in ({}, {**good, "version": 9}, {**good, "byPassphrase": "!!"}, []):
        with pytest.raises(SealError, match="recovery key"):
            KeyEnvelope.from_json(broken)


def test_a_sealed_note_round_trips_and_hides_id_text_and_size() -> None:
    cipher = NoteCipher(new_account_key("p", n=CHEAP).data_key)
    opaque = cipher.opaque_id("project:p-1", "deploy-day-1a2")
    assert opaque.startswith("e-") and len(opaque) == 28 and "deploy" not in opaque
    assert opaque == cipher.opaque_id("project:p-1", "deploy-day-1a2")  # every device agrees
    assert opaque != cipher.opaque_id("user", "deploy-day-1a2")
    sealed = cipher.seal("project:p-1", "deploy-day-1a2", NOTE)
    assert cipher.open("project:p-1", opaque, sealed) == ("deploy-day-1a2", NOTE)
    for plain in (b"Tuesdays", b"deploy-day", b"summary"):
        assert plain not in sealed
    # The same content sealed again is the same bytes (one revision on every device); any
    # other content, even one letter, gets another nonce and other bytes.
    assert sealed == cipher.seal("project:p-1", "deploy-day-1a2", NOTE)
    other = cipher.seal("project:p-1", "deploy-day-1a2", NOTE.replace("noon", "moon"))
    assert other[1:13] != sealed[1:13] and other != sealed
    assert opaque != cipher.opaque_scope("project:p-1")
    assert cipher.opaque_scope("user").startswith("e-")
    assert cipher.opaque_scope("user") == cipher.opaque_scope("user")
    short = cipher.seal("project:p-1", "a-1", "x")
    longer = cipher.seal("project:p-1", "a-1", "x" * 400)
    assert len(short) == len(longer)  # one size bucket
    assert bucket_size(508) == 512 and bucket_size(509) == 1024


def test_a_ciphertext_moved_to_another_note_or_scope_or_key_is_refused() -> None:
    cipher = NoteCipher(new_account_key("p", n=CHEAP).data_key)
    sealed = cipher.seal("project:p-1", "a-1", NOTE)
    other_note = cipher.opaque_id("project:p-1", "b-2")
    with pytest.raises(SealError, match="moved"):
        cipher.open("project:p-1", other_note, sealed)
    with pytest.raises(SealError, match="moved"):
        cipher.open("project:p-2", cipher.opaque_id("project:p-2", "a-1"), sealed)
    stranger = NoteCipher(new_account_key("p", n=CHEAP).data_key)
    with pytest.raises(SealError, match="another key"):
        stranger.open("project:p-1", cipher.opaque_id("project:p-1", "a-1"), sealed)
    flipped = bytearray(sealed)
    flipped[-1] ^= 1
    with pytest.raises(SealError):
        cipher.open("project:p-1", cipher.opaque_id("project:p-1", "a-1"), bytes(flipped))
    with pytest.raises(SealError, match="version"):
        cipher.open("project:p-1", "e-x", b"\x07" + sealed[1:])


def test_recovery_keys_are_thirteen_groups_of_four() -> None:
    key = new_account_key("p", n=CHEAP).recovery_key
    groups = key.split("-")
    assert len(groups) == 13 and all(len(group) == 4 for group in groups)
    assert len(parse_recovery_key(key)) == 32


def test_the_real_cost_takes_a_noticeable_but_bounded_time() -> None:
    """scrypt at its stored cost (n = 2**17, 128 MiB): slow for a guesser, a moment for a
    person (bounded loosely: this machine may be busy)."""
    started = time.perf_counter()
    ScryptParams(b"0123456789abcdef").derive("a passphrase")
    elapsed = time.perf_counter() - started
    assert SCRYPT_N == 2**17 and 0.05 < elapsed < 30
