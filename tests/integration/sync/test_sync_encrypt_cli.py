"""End-to-end encryption as people turn it on: the real CLI on three machines against a real
``oharness sync-server serve`` on file storage and S3, the storage scanned for plaintext
(issue 31)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cliworld import (
    OHARNESS,
    Machine,
    Server,
    Storage,
    machines,
    plaintext_in,
    running_server,
    token_for,
)

PASSPHRASE = "correct horse battery staple"
NEW_PASSPHRASE = "a much longer passphrase now"
PROJECT_ID = "p-divergence-0123456789abcdef"


@pytest.fixture
def server(storage: Storage, tmp_path: Path) -> Iterator[Server]:
    """The server allowing 600 requests a minute per account: these tests run a dozen passes
    of three machines of one account within seconds, which the default 60 refuses (as it
    should) on a fast run."""
    with running_server(storage, tmp_path, OHARNESS_SYNC_RATE_PER_MINUTE="600") as running:
        yield running


def typed(machine: Machine, *args: str, text: str) -> subprocess.CompletedProcess[str]:
    """The CLI with ``text`` on stdin (a passphrase for --passphrase-stdin)."""
    environment = {k: v for k, v in os.environ.items() if k != "OHARNESS_TOKEN"}
    environment["OHARNESS_HOME"] = str(machine.home)
    return subprocess.run(
        [str(OHARNESS), *args],
        cwd=machine.root,
        input=text,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def seal(machine: Machine, *joining: Machine) -> None:
    """Turn end-to-end encryption on from ``machine``; the ``joining`` machines unlock it."""
    on = typed(machine, "sync", "encrypt", "--yes", "--passphrase-stdin", text=PASSPHRASE + "\n")
    assert on.returncode == 0, on.stderr
    for other in joining:
        unlocked = typed(other, "sync", "unlock", "--passphrase-stdin", text=PASSPHRASE + "\n")
        assert unlocked.returncode == 0, unlocked.stderr


def sealed_pair(server: Server, tmp_path: Path) -> tuple[Machine, Machine]:
    """Two machines of one account with a note, encryption turned on from the first and the
    second unlocked, both synced."""
    a, b = machines(tmp_path, 2)
    for machine in (a, b):
        machine.login(server.origin)
    a.write("deploy-day-1a2", "We deploy on Tuesdays at noon.\n", summary="Deploy day")
    a.ok("sync", "now")
    seal(a, b)
    b.ok("sync", "now")
    return a, b


def keyless_refused(
    server: Server, tmp_path: Path
) -> tuple[Machine, Machine, subprocess.CompletedProcess[str]]:
    """Encryption turned on from a machine with a note; a second machine without the key,
    with a note of its own, refused at its first pass (returned)."""
    a, c = machines(tmp_path, 2)
    for machine in (a, c):
        machine.login(server.origin)
    a.write("deploy-day-1a2", "We deploy on Tuesdays at noon.\n", summary="Deploy day")
    a.ok("sync", "now")
    seal(a)
    c.write("from-c-9e8", "Written on c, which has no key.\n", summary="From c")
    return a, c, c.run("sync", "now")


def test_turn_on_join_recover_and_change_the_passphrase(
    server: Server, storage: Storage, tmp_path: Path
) -> None:
    a, b, c, d = machines(tmp_path, 4)
    for machine in (a, b, c, d):
        machine.login(server.origin)
    a.write("deploy-day-1a2", "We deploy on Tuesdays at noon.\n", summary="Deploy day")
    a.ok(
        "memory",
        "remember",
        "-s",
        "I prefer small pull requests",
        "-b",
        "Under 300 lines.",
        "--scope",
        "user",
    )
    a.ok("sync", "now"), b.ok("sync", "now")
    assert b.files() == a.files()
    words = ["Tuesdays", "Deploy day", "deploy-day-1a2", "small pull requests", PROJECT_ID]
    assert plaintext_in(storage, words)  # readable before: the baseline of the scan

    turned = typed(a, "sync", "encrypt", "--yes", "--passphrase-stdin", text=PASSPHRASE + "\n")
    assert turned.returncode == 0, turned.stderr
    assert "cloud copy of your notes cannot be read" in turned.stdout
    recovery = re.search(r"Recovery key[^\n]*\n\s+(\S+)", turned.stdout)
    assert recovery is not None, turned.stdout
    assert plaintext_in(storage, words) == []
    for _ in range(2):  # a holds the key: its passes go sealed, and call it no storage reset
        sealed = a.run("sync", "now")
        assert sealed.returncode == 0 and "reset" not in sealed.stdout + sealed.stderr, sealed
    assert plaintext_in(storage, words) == []

    # b has no key yet: paused, nothing uploaded, its notes untouched.
    before = b.files()
    b.write("written-on-b-7c1", "A note b wrote meanwhile.\n", summary="From b")
    paused = b.run("sync", "now")
    assert "encrypted" in paused.stdout + paused.stderr
    assert "oharness sync unlock" in paused.stdout + paused.stderr
    assert plaintext_in(storage, ["A note b wrote", "written-on-b-7c1"]) == []
    assert {k: v for k, v in b.files().items() if k in before} == before

    wrong = typed(b, "sync", "unlock", "--passphrase-stdin", text="not the passphrase\n")
    assert wrong.returncode != 0 and "wrong passphrase" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
    assert not (b.home / "e2e-key.json").exists()
    joined = typed(b, "sync", "unlock", "--passphrase-stdin", text=PASSPHRASE + "\n")
    assert joined.returncode == 0, joined.stderr
    b.ok("sync", "now")
    a.ok("sync", "now")
    assert "written-on-b-7c1.md" in a.files() and a.files() == b.files()
    assert plaintext_in(storage, [*words, "A note b wrote", "written-on-b-7c1"]) == []

    # c joins with the recovery key; the passphrase changes; d joins with the new one only.
    recovered = typed(
        c, "sync", "unlock", "--recovery-key", "--passphrase-stdin", text=recovery.group(1) + "\n"
    )
    assert recovered.returncode == 0, recovered.stderr
    c.ok("sync", "now")
    assert c.files() == a.files()
    changed = typed(a, "sync", "passphrase", "--passphrase-stdin", text=NEW_PASSPHRASE + "\n")
    assert changed.returncode == 0, changed.stderr
    old = typed(d, "sync", "unlock", "--passphrase-stdin", text=PASSPHRASE + "\n")
    assert old.returncode != 0 and "wrong passphrase" in old.stderr
    new = typed(d, "sync", "unlock", "--passphrase-stdin", text=NEW_PASSPHRASE + "\n")
    assert new.returncode == 0, new.stderr
    d.ok("sync", "now")
    assert d.files() == a.files()
    assert "end-to-end encrypted" in d.ok("sync", "status")


@pytest.mark.parametrize("storage", ["file"], indirect=True)  # S3: the first test
def test_turning_it_off_uploads_in_clear_only_when_confirmed(
    server: Server, storage: Storage, tmp_path: Path
) -> None:
    a, b = sealed_pair(server, tmp_path)
    b.write("from-b-2b3", "Written on b while sealed.\n", summary="From b")
    b.ok("sync", "now")
    a.ok("sync", "now")
    words = ["Tuesdays", "Written on b", "from-b-2b3"]
    assert plaintext_in(storage, words) == []

    unconfirmed = a.run("sync", "encrypt", "--off")  # no terminal, no --yes: nothing happens
    assert unconfirmed.returncode != 0 and "--yes" in unconfirmed.stderr
    assert plaintext_in(storage, words) == []
    off = a.run("sync", "encrypt", "--off", "--yes")
    assert off.returncode == 0, off.stderr
    assert "uploads every note in clear" in off.stdout
    assert plaintext_in(storage, words) == words  # readable again, as confirmed
    assert not (a.home / "e2e-key.json").exists()
    for _ in range(2):  # back to the plain copy: no storage reset either
        plain = a.run("sync", "now")
        assert plain.returncode == 0 and "reset" not in plain.stdout + plain.stderr, plain

    # b still holds the key: its next pass stops instead of sealing notes again.
    paused = b.run("sync", "now")
    assert "turned off" in paused.stdout + paused.stderr
    forgot = b.run("sync", "encrypt", "--off", "--yes")
    assert forgot.returncode == 0 and "forgot the key" in forgot.stdout
    b.ok("sync", "now")
    assert a.files() == b.files()
    assert "end-to-end" not in b.ok("sync", "status")


@pytest.mark.parametrize("storage", ["file"], indirect=True)  # S3: the first test
def test_turned_off_elsewhere_while_the_sealed_copy_is_empty_stops_sealed_uploads(
    server: Server, storage: Storage, tmp_path: Path
) -> None:
    # The sealed copy is empty, so b's next snapshot shows no change: only its upload can tell.
    a, b = machines(tmp_path, 2)
    for machine in (a, b):
        machine.login(server.origin)
        machine.ok("sync", "now")
    seal(a, b)
    b.ok("sync", "now")
    assert a.run("sync", "encrypt", "--off", "--yes").returncode == 0
    b.write("after-off-3c4", "Written on b after a turned encryption off.\n", summary="After")
    paused = b.run("sync", "now")
    assert "turned off for this account on another machine" in paused.stdout + paused.stderr
    assert paused.returncode == 1  # a script sees that nothing synced
    assert plaintext_in(storage, ["after-off-3c4"]) == []  # nothing sealed or clear went up
    assert b.run("sync", "encrypt", "--off", "--yes").returncode == 0
    b.ok("sync", "now")
    a.ok("sync", "now")
    assert a.files() == b.files() and "after-off-3c4" in "".join(a.files())


@pytest.mark.parametrize("storage", ["file"], indirect=True)  # S3: the first test
def test_a_conflict_waiting_before_encryption_is_resolved_after_it(
    server: Server, storage: Storage, tmp_path: Path
) -> None:
    a, b = machines(tmp_path, 2)
    for machine in (a, b):
        machine.login(server.origin)
    a.write("shared-4d5", "line one\n", summary="Shared")
    a.ok("sync", "now"), b.ok("sync", "now")
    a.write("shared-4d5", "line one from a\n", summary="Shared")
    b.write("shared-4d5", "line one from b\n", summary="Shared")
    a.ok("sync", "now")
    assert "conflict: shared-4d5" in b.ok("sync", "now")

    seal(a, b)
    b.ok("sync", "now")
    assert "shared-4d5" in b.ok("sync", "conflicts")  # still waiting, nothing lost
    b.ok("sync", "resolve", "shared-4d5", "--keep", "local")
    a.ok("sync", "now")
    assert b"line one from b" in a.files()["shared-4d5.md"]
    assert plaintext_in(storage, ["line one from", "shared-4d5"]) == []


@pytest.mark.parametrize("storage", ["file"], indirect=True)  # S3: the first test
def test_a_storage_reset_or_restore_keeps_the_account_encrypted(
    server: Server, storage: Storage, tmp_path: Path
) -> None:
    """The operator wipes the storage (the key envelope goes with it), then restores a copy from
    before a passphrase change: the devices holding the key put the envelope back and upload
    their notes sealed again; a device without the key is still refused; nothing is lost."""
    a, b, c = machines(tmp_path, 3)
    for machine in (a, b, c):
        machine.login(server.origin)
    a.write("deploy-day-1a2", "We deploy on Tuesdays at noon.\n", summary="Deploy day")
    a.ok("sync", "now")
    seal(a, b)
    b.write("from-b-2b3", "Written on b while sealed.\n", summary="From b")
    b.ok("sync", "now"), a.ok("sync", "now")
    before_change = storage.keys()
    words = ["Tuesdays", "Written on b", "from-b-2b3", "deploy-day-1a2", PROJECT_ID]

    storage.wipe()
    c.write("from-c-9e8", "Written on c, which has no key.\n", summary="From c")
    assert "encrypted" not in c.run("sync", "now").stdout  # nothing there: c's notes go up
    a.ok("sync", "now")  # a finds c's plain scope, not its own: the envelope is put back
    assert "end-to-end encrypted" in a.ok("sync", "status")
    b.ok("sync", "now")
    assert a.files() == b.files() and "from-b-2b3.md" in a.files()
    assert plaintext_in(storage, words) == []
    paused = c.run("sync", "now")  # the account is encrypted again: c is asked for the key
    assert "oharness sync unlock" in paused.stdout + paused.stderr
    assert typed(c, "sync", "unlock", "--passphrase-stdin", text=PASSPHRASE + "\n").returncode == 0
    c.ok("sync", "now"), a.ok("sync", "now")
    assert "from-c-9e8.md" in a.files()

    changed = typed(a, "sync", "passphrase", "--passphrase-stdin", text=NEW_PASSPHRASE + "\n")
    assert changed.returncode == 0, changed.stderr
    storage.restore(before_change)  # from before the change and before c's note
    for machine in (a, b, c, a):
        machine.ok("sync", "now")
    assert a.files() == b.files() == c.files() and "from-c-9e8.md" in b.files()
    assert plaintext_in(storage, [*words, "Written on c"]) == []


@pytest.mark.parametrize("storage", ["file"], indirect=True)
def test_doctor_reports_a_waiting_conflict_and_a_scope_waiting_for_unlock(
    server: Server, tmp_path: Path
) -> None:
    a, b = machines(tmp_path, 2)
    for machine in (a, b):
        machine.login(server.origin)
    a.write("deploy-day-1a2", "Tuesdays.\n", summary="Deploy day")
    a.ok("sync", "now"), b.ok("sync", "now")
    a.write("deploy-day-1a2", "Tuesdays at noon.\n", summary="Deploy day")
    b.write("deploy-day-1a2", "Wednesdays.\n", summary="Deploy day")
    a.ok("sync", "now"), b.run("sync", "now")
    healthy = a.run("doctor", "--json", "--user-home", str(tmp_path))
    assert {c["area"]: c["ok"] for c in json.loads(healthy.stdout)["checks"]}["sync"] is True
    checks = json.loads(b.run("doctor", "--json", "--user-home", str(tmp_path)).stdout)["checks"]
    waiting = [c for c in checks if "conflict(s) waiting" in c["seen"]]
    assert len(waiting) == 1 and "oharness sync resolve" in waiting[0]["fix"]  # said once
    seal(a)
    b.run("sync", "now")
    doctor = b.run("doctor", "--user-home", str(tmp_path))
    assert doctor.returncode == 3 and "paused: encrypted" in doctor.stdout
    assert "sync unlock" in doctor.stdout


@pytest.mark.parametrize("storage", ["file"], indirect=True)  # S3: the first test
def test_a_key_of_another_account_or_an_old_key_uploads_nothing(
    server: Server, storage: Storage, tmp_path: Path
) -> None:
    """The key kept on a machine is one account's, and the account's current one: a machine
    signed in to another account, or holding a key made before the account's key was made
    anew, is paused with the fix, and nothing reaches the server."""
    a, b = sealed_pair(server, tmp_path)

    # b signs in to bob's (plain) account and rebinds deliberately: alice's key is not used.
    b.ok("logout")
    b.login(server.origin, "bob")
    for scope, key in (("project", f"project:{PROJECT_ID}"), ("user", "user")):
        b.ok("sync", "unbind", scope, "--confirm", key)
    before = set(storage.keys())
    paused = b.run("sync", "now")
    said = paused.stdout + paused.stderr
    assert paused.returncode == 1 and "is account alice's, and bob is signed in" in said
    assert "'oharness sync unlock'" in said and "e2e-key.json" in said
    assert set(storage.keys()) == before  # nothing uploaded, no envelope put into bob's account
    assert "holds the key" not in b.run("sync", "status").stdout  # alice's key is not bob's

    # alice's key is made anew from a (off, then on): b, back on alice, holds the old one.
    b.ok("logout")
    b.login(server.origin)
    for scope, key in (("project", f"project:{PROJECT_ID}"), ("user", "user")):
        b.ok("sync", "unbind", scope, "--confirm", key)
    assert a.run("sync", "encrypt", "--off", "--yes").returncode == 0
    seal(a)
    b.write("written-on-b-4d5", "Written on b with the old key.\n", summary="Old key")
    paused = b.run("sync", "now")
    said = paused.stdout + paused.stderr
    assert paused.returncode == 1 and "does not open this account's notes" in said
    assert plaintext_in(storage, ["Written on b"]) == []
    assert not (b.home / "e2e-key.json").exists()  # a dead key is never used again
    # The storage is wiped: b puts back no old envelope and uploads nothing, sealed or clear.
    storage.wipe()
    assert b.run("sync", "now").returncode == 1 and storage.keys() == {}
    a.ok("sync", "now")  # a holds the current key: its envelope goes back
    unlocked = typed(b, "sync", "unlock", "--passphrase-stdin", text=PASSPHRASE + "\n")
    assert unlocked.returncode == 0, unlocked.stderr
    b.ok("sync", "now"), a.ok("sync", "now")
    assert "written-on-b-4d5.md" in a.files() and a.files() == b.files()
    assert plaintext_in(storage, ["Written on b", "Tuesdays"]) == []


@pytest.mark.parametrize("storage", ["file"], indirect=True)  # S3: the first test
def test_signing_in_to_an_encrypted_account_says_to_unlock(
    server: Server, storage: Storage, tmp_path: Path
) -> None:
    a, c = machines(tmp_path, 2)
    a.login(server.origin)
    a.ok("sync", "now")
    seal(a)
    said = c.ok("login", "--origin", server.origin, "--token", token_for("alice"))
    assert "end-to-end encrypted: 'oharness sync unlock' enters its passphrase" in said
    unlocked = typed(c, "sync", "unlock", "--passphrase-stdin", text=PASSPHRASE + "\n")
    assert unlocked.returncode == 0, unlocked.stderr
    again = json.loads(
        c.ok("login", "--origin", server.origin, "--token", token_for("alice"), "--json")
    )
    assert again["needsUnlock"] is False and again["userId"] == "alice"
    assert "unlock" not in a.ok("login", "--origin", server.origin, "--token", token_for("alice"))


@pytest.mark.parametrize("storage", ["file"], indirect=True)  # S3: the first test
def test_a_machine_told_the_account_is_encrypted_uploads_nothing_after_a_reset(
    server: Server, storage: Storage, tmp_path: Path
) -> None:
    """c, without the key, was refused as the account is encrypted; the storage is wiped (the
    envelope with it): c still uploads nothing in clear until a machine holding the key puts
    the envelope back, or the account is turned off on purpose."""
    a, c, refused = keyless_refused(server, tmp_path)
    assert "oharness sync unlock" in refused.stdout + refused.stderr

    storage.wipe()
    held = c.run("sync", "now")
    said = held.stdout + held.stderr
    assert held.returncode == 1 and "the server now holds no key" in said, said
    assert plaintext_in(storage, ["Written on c", "from-c-9e8"]) == []
    a.ok("sync", "now")  # a holds the key: the envelope goes back
    asked = c.run("sync", "now")
    assert "oharness sync unlock" in asked.stdout + asked.stderr
    assert plaintext_in(storage, ["Written on c", "Tuesdays"]) == []

    # Turned off on purpose (the envelope stored as "off"): c syncs in clear again.
    assert a.run("sync", "encrypt", "--off", "--yes").returncode == 0
    c.ok("sync", "now"), a.ok("sync", "now")
    assert "from-c-9e8.md" in a.files() and a.files() == c.files()


@pytest.mark.parametrize("storage", ["file"], indirect=True)  # S3: the first test
@pytest.mark.parametrize("who", ["the machine without the key", "a machine holding it"])
def test_turned_off_after_a_storage_reset_stays_off(
    server: Server, storage: Storage, tmp_path: Path, who: str
) -> None:
    """The storage lost the envelope; a person turns encryption off (from a machine without
    the key, or one holding it): it is recorded, so no other machine holding the key puts the
    old envelope back and erases the notes uploaded in clear."""
    a, c, refused = keyless_refused(server, tmp_path)
    assert refused.returncode == 1  # refused: the account is encrypted
    storage.wipe()
    off = (c if who == "the machine without the key" else a).run(
        "sync", "encrypt", "--off", "--yes"
    )
    assert off.returncode == 0, off.stderr
    c.ok("sync", "now")
    stopped = a.run("sync", "now")
    if who == "the machine without the key":  # a still holds the key: told, and it waits
        assert "turned off for this account on another machine" in stopped.stdout + stopped.stderr
        assert a.run("sync", "encrypt", "--off", "--yes").returncode == 0
        a.ok("sync", "now")
    c.ok("sync", "now")
    assert "from-c-9e8.md" in a.files() and a.files() == c.files()
    assert plaintext_in(storage, ["Written on c"]) == ["Written on c"]  # in clear, on purpose
