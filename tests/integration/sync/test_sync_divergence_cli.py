"""No silent divergence, through the real CLI and a real sync server on loopback, on file
storage and on SeaweedFS S3: storage resets, unsyncable notes named with their reasons,
credentials never uploaded, commits sized to a proxy's limit, offline errors printed once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cliworld import (
    OHARNESS,
    LimitingProxy,
    Machine,
    Server,
    machines,
    token_for,
)

GITHUB_TOKEN = "ghp_" + "Zx9Q2mL7vR4tK8wB3nH6jC1pD5sF0gY2aE7u"
AWS_SECRET = "9dF3kLm2Qx7Rt/Vb8Nw+Yp4Zs1Hc6Ju0Ge5Ai3Ko"
SLACK_WEBHOOK = "hooks.slack.com/services/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"


@pytest.fixture
def trio(server: Server, tmp_path: Path) -> list[Machine]:
    found = list(machines(tmp_path, 3))
    for machine in found:
        machine.login(server.origin)
    return found


def _project_notes(machine: Machine) -> dict[str, bytes]:
    return machine.files()


def test_a_reset_storage_is_refilled_and_nothing_is_deleted(
    trio: list[Machine], server: Server
) -> None:
    a, b, c = trio
    a.write("kept-1", "written on a before the reset\n")
    a.ok("sync", "now"), b.ok("sync", "now")
    server.storage.wipe()
    for index in range(3):  # b puts its notes back and moves the version past a's
        b.write(f"after-{index}", f"written on b after the reset {index}\n")
        b.ok("sync", "now")
    out = a.ok("sync", "now")
    assert "reset or restored" in out
    b.ok("sync", "now"), c.ok("sync", "now")
    assert _project_notes(a) == _project_notes(b) == _project_notes(c)
    assert set(_project_notes(a)) == {"kept-1.md", "after-0.md", "after-1.md", "after-2.md"}
    assert not list((a.home / "memory-backups").glob("*pull-delete*"))


def test_unsyncable_and_credential_notes_are_named_and_everything_else_syncs(
    trio: list[Machine], server: Server
) -> None:
    a, b, _ = trio
    a.write("plain-1", "an ordinary note\n")
    a.write("secret-1", f"the deploy token is {GITHUB_TOKEN}\n")
    # Forms of the attack report, hand-written: a bare AWS secret and a Slack webhook.
    a.write("secret-2", f"The AWS secret for CI is {AWS_SECRET}\n")
    a.write("secret-3", f"alerts: {SLACK_WEBHOOK}\n")
    (a.notes / "broken-1.md").write_text('---\n{"id": "broken-1", "summ\n', encoding="utf-8")
    result = a.run("sync", "now")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert any("secret-1.md" in line and "credential" in line for line in lines), lines
    assert any("broken-1.md" in line for line in lines), lines
    assert all(line.startswith("oharness: ") for line in lines)
    assert "Traceback" not in result.stderr
    status = a.status()["project"]
    named = {item["file"]: item["code"] for item in status["noteErrors"]}
    assert named["secret-1.md"] == "credential" and "broken-1.md" in named
    assert named["secret-2.md"] == named["secret-3.md"] == "credential"
    shown = a.ok("sync", "status")
    stored = server.storage.keys()
    for secret in (GITHUB_TOKEN, AWS_SECRET, SLACK_WEBHOOK.rsplit("/", 1)[1]):
        assert secret not in shown
        assert not any(secret.encode() in data for data in stored.values())
    assert any(b"an ordinary note" in data for data in stored.values())
    b.ok("sync", "now")
    assert set(b.files()) == {"plain-1.md"}


def test_a_note_repaired_after_a_remote_edit_converges(trio: list[Machine]) -> None:
    a, b, _ = trio
    original = a.write("shared-1", "line one\nline two\n")
    a.ok("sync", "now"), b.ok("sync", "now")
    a.write("shared-1", "line one edited on a\nline two\n")
    a.ok("sync", "now")
    (b.notes / "shared-1.md").write_bytes(original[:20])  # half-saved in an editor
    assert b.run("sync", "now").returncode == 1
    (b.notes / "shared-1.md").write_bytes(original)
    b.ok("sync", "now")
    assert b.files()["shared-1.md"] == a.files()["shared-1.md"]


def test_commits_fit_a_proxy_limit_and_an_oversize_note_is_reported_alone(
    server: Server, tmp_path: Path
) -> None:
    proxy = LimitingProxy(server.origin, limit=16 * 1024)
    try:
        a, b = machines(tmp_path / "proxied", 2)
        a.login(proxy.origin), b.login(server.origin)
        for index in range(12):
            a.write(f"mid-{index}", f"note {index}\n" + "x" * 3000 + "\n")
        a.write("huge-1", "y" * 40_000 + "\n")
        result = a.run("sync", "now")
        assert result.returncode == 1
        assert proxy.refused >= 1
        failing = [line for line in result.stderr.splitlines() if "not synced" in line]
        assert len(failing) == 1 and "huge-1" in failing[0] and "413" in failing[0]
        b.ok("sync", "now")
        assert set(b.files()) == {f"mid-{index}.md" for index in range(12)}
    finally:
        proxy.close()


def test_offline_sync_now_says_so_once_on_stderr(tmp_path: Path) -> None:
    (machine,) = machines(tmp_path, 1)
    # Nothing listens on the discard port; sign-in needs the server, so set the origin by hand.
    (machine.home / "cloud.json").write_text(json.dumps({"origin": "http://127.0.0.1:9"}))
    result = machine.run("sync", "now", OHARNESS_TOKEN=token_for("alice"))
    assert result.returncode == 1
    assert result.stdout == ""
    # The home this test made by hand is loose: one notice says it was made private.
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if not line.startswith("notice: ")]
    assert len(lines) - len(errors) <= 1
    assert errors and all("cannot reach the sync server" in line for line in errors)
    assert "retries later" not in result.stderr


def test_renaming_to_an_upper_case_suffix_is_reported_not_deleted(trio: list[Machine]) -> None:
    a, b, _ = trio
    a.write("cased-1", "a note\n")
    a.ok("sync", "now"), b.ok("sync", "now")
    (a.notes / "cased-1.md").rename(a.notes / "cased-1.MD")
    result = a.run("sync", "now")
    assert result.returncode == 1 and "cased-1.MD" in result.stderr
    assert "oharness memory adopt cased-1.MD" in result.stderr  # the fix `memory list` names
    b.ok("sync", "now")
    assert "cased-1.md" in b.files()
    a.ok("memory", "adopt", "cased-1.MD")  # and it works: syncing again, nothing held
    assert a.ok("sync", "now") and "cased-1.md" in a.files()


def test_a_corrupt_state_file_brings_no_conflicts(trio: list[Machine]) -> None:
    a, b, _ = trio
    for index in range(3):
        a.write(f"calm-{index}", f"note {index}\n")
    a.ok("sync", "now"), b.ok("sync", "now")
    a.write("calm-0", "note 0 edited on a\n")
    a.ok("sync", "now")
    for state in (b.home / "memory-sync").glob("*/state.json"):
        state.write_text('{"format": 1, "notes": {"trunc', encoding="utf-8")
    out = b.ok("sync", "now")
    assert "conflicts 0" in out and "conflict:" not in out
    assert b.files() == a.files()


def test_temp_files_of_killed_writes_are_cleaned_by_sync(trio: list[Machine]) -> None:
    a, _, _ = trio
    a.write("kept-1", "a note\n")
    stray = a.notes / ".kept-1.md.0123456789ab.tmp"
    stray.write_bytes(b"half a note")
    old = stray.stat().st_mtime - 3600
    os.utime(stray, (old, old))
    fresh = a.notes / ".kept-1.md.ba9876543210.tmp"
    fresh.write_bytes(b"a write in progress")
    a.ok("sync", "now")
    assert not stray.exists() and fresh.exists()


def test_a_restored_older_copy_is_noticed_after_others_committed(
    trio: list[Machine], server: Server
) -> None:
    a, b, c = trio
    a.write("first-1", "before the backup\n")
    a.ok("sync", "now")
    backup = server.storage.keys()
    a.write("second-1", "after the backup\n")
    a.ok("sync", "now"), b.ok("sync", "now")
    server.storage.restore(backup)  # back at version 1
    c.write("other-1", "written on c after the restore\n")
    c.ok("sync", "now")  # another version 2 on top of the restored copy
    assert "reset or restored" in a.ok("sync", "now")
    b.ok("sync", "now"), c.ok("sync", "now"), a.ok("sync", "now")
    assert a.files() == b.files() == c.files()
    assert set(a.files()) == {"first-1.md", "second-1.md", "other-1.md"}


def test_sync_killed_at_any_moment_loses_nothing(trio: list[Machine]) -> None:
    a, b, _ = trio
    for index in range(300):
        a.write(f"bulk-{index}", f"note {index}\n" + "z" * 400 + "\n")
    for delay in (0.4, 0.9, 1.6):
        process = subprocess.Popen(
            [str(OHARNESS), "sync", "now"],
            cwd=a.root,
            env={**os.environ, "OHARNESS_HOME": str(a.home)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
    a.ok("sync", "now")
    b.ok("sync", "now")
    assert a.files() == b.files() and len(b.files()) == 300


def test_sync_conflicts_shows_summary_type_and_tag_changes(trio: list[Machine]) -> None:
    a, b, _ = trio
    note = json.loads(a.ok("memory", "remember", "-s", "Release day", "-b", "Tuesday", "--json"))
    note_id = str(note["id"])
    a.ok("sync", "now"), b.ok("sync", "now")
    a.ok("memory", "remember", "--id", note_id, "-s", "Release day is Wednesday", "-b", "Tuesday")
    b.ok("memory", "remember", "--id", note_id, "-s", "Release day is Friday", "-b", "Tuesday")
    a.ok("sync", "now"), b.ok("sync", "now")
    shown = b.ok("sync", "conflicts")
    assert "summary: Release day is Friday (changed)" in shown
    assert "summary: Release day is Wednesday (changed)" in shown
    assert "tags:" in shown and "type:" in shown


def test_a_conflict_whose_note_was_forgotten_here_says_so(trio: list[Machine]) -> None:
    # The listing showed the version recorded when the conflict arose, so "--keep local" read
    # as keeping that text while it deletes the note everywhere.
    a, b, _ = trio
    note = json.loads(a.ok("memory", "remember", "-s", "Release day", "-b", "Tuesday", "--json"))
    note_id = str(note["id"])
    a.ok("sync", "now"), b.ok("sync", "now")
    a.ok("memory", "remember", "--id", note_id, "-b", "Wednesday")
    b.ok("memory", "remember", "--id", note_id, "-b", "Friday")
    a.ok("sync", "now"), b.ok("sync", "now")
    b.ok("memory", "forget", note_id, "-y")
    shown = b.ok("sync", "conflicts")
    assert "this machine: (deleted: --keep local deletes it everywhere)" in shown
    assert "Friday" not in shown and "Wednesday" in shown
