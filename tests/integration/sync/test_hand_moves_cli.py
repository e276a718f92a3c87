"""Files moved, renamed or re-cased by hand never become deletes on other machines: two
machines (two OHARNESS_HOMEs, two project folders) through the real CLI and a real
``oharness sync-server serve`` on loopback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cliworld import Machine, Server, Storage, machines

from oharness.notes.format import parse_note_bytes, serialise_note_bytes


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    directory = tmp_path / "storage"
    directory.mkdir()
    running = Server(Storage(f"file://{directory}", {}, directory=directory), tmp_path / "s.log")
    yield running
    running.stop()


@pytest.fixture
def pair(server: Server, tmp_path: Path) -> list[Machine]:
    found = list(machines(tmp_path, 2))
    for machine in found:
        machine.login(server.origin)
    return found


def _synced(a: Machine, b: Machine, *notes: str) -> dict[str, bytes]:
    for note_id in notes:
        a.write(note_id, f"the text of {note_id}\n")
    a.ok("sync", "now"), b.ok("sync", "now")
    assert set(b.files()) == {f"{note_id}.md" for note_id in notes}
    return b.files()


def _held(machine: Machine, scope: str = "project") -> dict[str, dict[str, Any]]:
    """The files the last pass held back, by file, from ``sync status --json``."""
    return {item["file"]: item for item in machine.status()[scope]["noteErrors"]}


def _doctor(machine: Machine) -> tuple[int, dict[str, Any]]:
    result = machine.run("memory", "doctor", "--json")
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def test_a_note_moved_into_a_subfolder_is_not_deleted_elsewhere(pair: list[Machine]) -> None:
    a, b = pair
    before = _synced(a, b, "moved-1", "kept-1")
    (a.notes / "archive").mkdir()
    shutil.move(a.notes / "moved-1.md", a.notes / "archive" / "moved-1.md")
    result = a.run("sync", "now")
    assert result.returncode == 1
    line = next(line for line in result.stderr.splitlines() if "archive/moved-1.md" in line)
    assert "oharness memory adopt archive/moved-1.md" in line and "not deleted" in line
    b.ok("sync", "now")
    assert b.files() == before  # still there, byte for byte
    held = _held(a)["archive/moved-1.md"]
    assert held["id"] == "moved-1" and held["code"] == "in_subfolder"
    assert "oharness memory adopt archive/moved-1.md" in held["message"]
    code, report = _doctor(a)
    assert code != 0 and report["healthy"] is False
    assert report["scopes"]["project"]["skipped"] == 1  # counted as the finding names it
    finding = next(f for f in report["findings"] if f["path"].endswith("archive/moved-1.md"))
    assert "oharness memory adopt archive/moved-1.md" in finding["message"]
    # The fix named: put back, it syncs again and nothing is held.
    a.ok("memory", "adopt", "archive/moved-1.md")
    assert a.files() == before
    a.ok("sync", "now")
    assert _held(a) == {}


def test_renamed_and_recased_files_are_not_deleted_elsewhere(pair: list[Machine]) -> None:
    a, b = pair
    before = _synced(a, b, "renamed-1", "recased-1", "kept-1")
    (a.notes / "renamed-1.md").rename(a.notes / "old-notes.md")
    (a.notes / "recased-1.md").rename(a.notes / "RECASED-1.md")
    result = a.run("sync", "now")
    assert result.returncode == 1
    assert "old-notes.md" in result.stderr and "RECASED-1.md" in result.stderr
    b.ok("sync", "now")
    assert b.files() == before
    held = _held(a)
    assert held["old-notes.md"]["id"] == "renamed-1"
    assert held["RECASED-1.md"]["id"] == "recased-1"
    for item in held.values():
        assert "oharness memory adopt" in item["message"]
    report = a.run("doctor", "--json")
    sync = next(c for c in json.loads(report.stdout)["checks"] if c["area"] == "sync project")
    assert report.returncode != 0 and sync["seen"].startswith("2 note(s) do not sync: ")
    for name in ("old-notes.md", "RECASED-1.md"):  # each named, with its fix
        assert f"{name} (" in sync["seen"] and f"oharness memory adopt {name}" in sync["seen"]
    # Run in another folder, doctor still says where: the folder, and the command to run there.
    elsewhere = Machine(a.root.parent / "elsewhere", a.home)
    elsewhere.root.mkdir(exist_ok=True)
    checks = json.loads(elsewhere.run("doctor", "--json").stdout)["checks"]
    row = next(c for c in checks if c["area"] == f"sync {a.root}")
    assert row["seen"] == "2 note(s) do not sync" and row["fix"].startswith(f"cd {a.root}, then ")
    listed = json.loads(a.ok("memory", "list", "--json"))
    assert {item["file"]: item["noteId"] for item in listed["notNotes"]} == {
        "RECASED-1.md": "recased-1",
        "old-notes.md": "renamed-1",
    }
    a.ok("memory", "adopt", "old-notes.md"), a.ok("memory", "adopt", "RECASED-1.md")
    assert a.files() == before
    a.ok("sync", "now"), b.ok("sync", "now")
    assert b.files() == before and _held(a) == {}


def test_an_edit_made_elsewhere_meanwhile_arrives_once_the_file_is_back(
    pair: list[Machine],
) -> None:
    a, b = pair
    _synced(a, b, "shared-1")
    (a.notes / "sub").mkdir()
    (a.notes / "shared-1.md").rename(a.notes / "sub" / "shared-1.md")
    assert a.run("sync", "now").returncode == 1
    b.write("shared-1", "edited on b while a had it in a subfolder\n")
    b.ok("sync", "now")
    assert a.run("sync", "now").returncode == 1  # held: the edit waits
    assert "edited on b" not in (a.notes / "sub" / "shared-1.md").read_text()
    a.ok("memory", "adopt", "sub/shared-1.md")
    a.ok("sync", "now")
    assert a.files() == b.files()
    assert "edited on b" in a.files()["shared-1.md"].decode()


def test_deleting_the_moved_file_deletes_the_note_everywhere(pair: list[Machine]) -> None:
    a, b = pair
    _synced(a, b, "gone-1", "kept-1")
    (a.notes / "archive").mkdir()
    (a.notes / "gone-1.md").rename(a.notes / "archive" / "gone-1.md")
    assert a.run("sync", "now").returncode == 1
    (a.notes / "archive" / "gone-1.md").unlink()  # now its text is gone from this machine
    a.ok("sync", "now"), b.ok("sync", "now")
    assert set(b.files()) == {"kept-1.md"}


def test_an_id_recased_in_the_frontmatter_is_held_not_deleted(pair: list[Machine]) -> None:
    a, b = pair
    before = _synced(a, b, "cased-id-1")
    note = parse_note_bytes((a.notes / "cased-id-1.md").read_bytes())
    (a.notes / "cased-id-1.md").unlink()
    recased = note.with_changes(id="Cased-Id-1")
    (a.notes / "Cased-Id-1.md").write_bytes(serialise_note_bytes(recased))
    assert a.run("sync", "now").returncode == 1
    b.ok("sync", "now")
    assert b.files() == before
    held = _held(a)["Cased-Id-1.md"]
    assert held["code"] == "recased" and "cased-id-1" in held["message"]


def test_the_user_notes_folder_is_guarded_too(pair: list[Machine]) -> None:
    a, b = pair
    folder = a.home / "memory" / "user"
    a.ok("memory", "remember", "--scope", "user", "-s", "My editor is Helix", "--body", "Yes.")
    a.ok("sync", "now"), b.ok("sync", "now")
    theirs = sorted((b.home / "memory" / "user").glob("*.md"))
    assert len(theirs) == 1
    (folder / "old").mkdir()
    mine = next(folder.glob("*.md"))
    mine.rename(folder / "old" / mine.name)
    result = a.run("sync", "now")
    assert result.returncode == 1 and f"old/{mine.name}" in result.stderr
    assert f"oharness memory adopt --scope user old/{mine.name}" in result.stderr
    b.ok("sync", "now")
    assert sorted((b.home / "memory" / "user").glob("*.md")) == theirs
