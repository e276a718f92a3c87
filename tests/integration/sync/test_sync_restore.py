"""After a storage reset or restore, through the real CLI and ``oharness sync-server serve``: a
side whose copy equals its last-synced version takes the other side's edit without a
conflict, edits on both sides merge, and an older copy the restore brought back never
replaces a newer version either machine holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cliworld import Machine, Server, Storage, machines


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    directory = tmp_path / "storage"
    directory.mkdir()
    running = Server(Storage(f"file://{directory}", {}, directory=directory), tmp_path / "log")
    yield running
    running.stop()


@pytest.fixture
def pair(server: Server, tmp_path: Path) -> list[Machine]:
    found = list(machines(tmp_path, 2))
    for machine in found:
        machine.login(server.origin)
    return found


def _pass(machine: Machine) -> dict[str, Any]:
    status = json.loads(machine.ok("sync", "now", "--json"))
    project: dict[str, Any] = next(s for s in status["scopes"] if s["scope"] == "project")
    return project


def _no_conflicts(*found: Machine) -> None:
    for machine in found:
        assert machine.status()["project"]["conflicts"] == []
        assert not list((machine.home / "memory-backups").glob("**/*conflict*"))


def test_after_a_reset_the_untouched_side_takes_the_edit(
    pair: list[Machine], server: Server
) -> None:
    a, b = pair
    a.write("shared-1", "first line\nsecond line\n")
    a.write("shared-2", "one\ntwo\nthree\nfour\n")
    _pass(a), _pass(b)
    server.storage.wipe()
    b.write("shared-1", "first line, edited on b after the reset\nsecond line\n")
    b.write("shared-2", "one, edited on b\ntwo\nthree\nfour\n")
    a.write("shared-2", "one\ntwo\nthree\nfour, edited on a\n")
    first = _pass(b)
    assert first["reset"] is True and sorted(first["pushed"]) == ["shared-1", "shared-2"]
    second = _pass(a)
    assert second["reset"] is True
    assert second["pulled"] == ["shared-1"] and second["merged"] == ["shared-2"]
    _pass(b)
    assert a.files() == b.files()
    assert b"edited on b after the reset" in a.files()["shared-1.md"]
    assert b"one, edited on b" in a.files()["shared-2.md"]
    assert b"four, edited on a" in b.files()["shared-2.md"]
    _no_conflicts(a, b)


def test_a_restored_older_copy_never_replaces_the_newer_version(
    pair: list[Machine], server: Server
) -> None:
    a, b = pair
    a.write("kept-1", "version one\n")
    a.write("moved-1", "version one\n")
    _pass(a), _pass(b)
    backup = server.storage.keys()  # the operator's nightly copy
    a.write("kept-1", "version two, after the copy\n")
    a.write("moved-1", "version two, after the copy\n")
    _pass(a), _pass(b)
    server.storage.restore(backup)
    b.write("moved-1", "version three, edited on b after the restore\n")
    first = _pass(b)  # b moved past version one: its versions go up over it
    assert first["reset"] is True and sorted(first["pushed"]) == ["kept-1", "moved-1"]
    second = _pass(a)
    assert second["pulled"] == ["moved-1"] and second["pushed"] == []
    assert a.files() == b.files()
    assert a.files()["kept-1.md"].endswith(b"version two, after the copy\n")
    assert b"version three" in a.files()["moved-1.md"]
    _no_conflicts(a, b)


def test_after_a_restore_the_untouched_side_uploads_first_and_takes_the_edit_later(
    pair: list[Machine], server: Server
) -> None:
    a, b = pair
    a.write("note-1", "version one\n")
    _pass(a), _pass(b)
    backup = server.storage.keys()
    a.write("note-1", "version two\n")
    _pass(a), _pass(b)
    server.storage.restore(backup)
    assert _pass(a)["pushed"] == ["note-1"]  # a's newer version over the restored one
    b.write("note-1", "version three on b\n")
    assert _pass(b)["pushed"] == ["note-1"]
    assert _pass(a)["pulled"] == ["note-1"]
    assert a.files() == b.files() and b"version three on b" in a.files()["note-1.md"]
    _no_conflicts(a, b)


#: ``sync now`` in a process that kills itself (SIGKILL, as ``kill -9``) right after the
#: ``count``-th atomic write of a file named ``name`` has replaced its target.
_KILLED_SYNC = """
import os, signal, sys
from oharness import fsio
from oharness.cli.entry import main
name, count, seen = sys.argv[1], int(sys.argv[2]), []
def hook(event, path):
    if event == "after-replace" and path.name == name:
        seen.append(path)
        if len(seen) == count:
            os.kill(os.getpid(), signal.SIGKILL)
fsio.set_fault_hook(hook)
sys.exit(main(["sync", "now"]))
"""


def _killed_pass(machine: Machine, name: str, count: int) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "OHARNESS_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_SYNC, name, str(count)],
        cwd=machine.root,
        env={**environment, "OHARNESS_HOME": str(machine.home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, (done.stdout, done.stderr)


def _idle(machine: Machine) -> None:
    project = _pass(machine)
    assert project["reset"] is False, project
    assert [project[key] for key in ("pushed", "pulled", "merged", "conflicts")] == [[]] * 4


@pytest.mark.parametrize(
    ("killed_after", "count", "emptied_again"),
    [
        ("shared-1.md", 1, False),  # the pulled note is written, the base does not know yet
        # The pull is recorded, the local edit not yet uploaded, and the storage is emptied
        # again before the next pass: what the base holds is not read as deletions.
        ("state.json", 2, True),
    ],
)
def test_a_pull_killed_after_a_reset_finishes_at_the_next_pass(
    pair: list[Machine], server: Server, killed_after: str, count: int, emptied_again: bool
) -> None:
    a, b = pair
    for index in range(4):
        a.write(f"shared-{index}", f"line one of {index}\nline two\nline three\n")
    _pass(a), _pass(b)
    server.storage.wipe()
    a.write("shared-1", "line one of 1, edited on a after the reset\nline two\nline three\n")
    assert _pass(a)["reset"] is True
    b.write("shared-2", "line one of 2, edited on b after the reset\nline two\nline three\n")
    _killed_pass(b, killed_after, count)
    if emptied_again:
        server.storage.wipe()
    _pass(b)  # nothing deleted here, nothing a conflict: what the server lacks goes up
    assert len(b.files()) == 4 and b"edited on b after" in b.files()["shared-2.md"]
    assert not list((b.home / "memory-backups").glob("**/*pull-delete*"))
    _pass(a), _pass(b)
    assert a.files() == b.files() and len(a.files()) == 4
    assert b"edited on a after the reset" in b.files()["shared-1.md"]
    assert b"edited on b after the reset" in a.files()["shared-2.md"]
    _idle(a)
    _idle(b)
    assert not list((b.home / "memory-backups").glob("**/*conflict*"))
