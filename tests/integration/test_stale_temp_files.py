"""Temp files of killed writers: a write in progress while fresh, removed once stale by the
next write to the folder (01.7), whether or not sync ever runs."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli import Cli
from test_crash_safety import CrashWriter

from oharness.fsio import is_temp_name
from oharness.notes.format import parse_note_bytes
from oharness.notes.tempfiles import STALE_TEMP_AGE_MS
from oharness.project.paths import HomeLayout


@pytest.fixture
def cli(home: Path, project_dir: Path) -> Cli:
    return Cli(home, project_dir)


def kill_mid_write(writer: CrashWriter, notes_dir: Path) -> Path:
    """Kill writers right after the temp file's fsync until one leaves its temp file."""
    for _ in range(50):
        pid = writer.spawn()
        while writer.line() != "saving":
            pass
        assert writer.line() == "fsync"  # the temp file is written and being flushed
        os.kill(pid, signal.SIGKILL)
        writer.wait_dead()
        temps = [notes_dir / name for name in os.listdir(notes_dir) if is_temp_name(name)]
        if temps:
            return temps[0]
    raise AssertionError("no killed write left a temp file in 50 tries")


def age(path: Path, ms: int) -> None:
    then = time.time() - ms / 1000
    os.utime(path, (then, then))


def doctor(cli: Cli) -> dict[str, Any]:
    """doctor's report; it exits 3 when it found problems (here: the foreign temp file)."""
    result = cli.run("memory", "doctor", "--json")
    report: dict[str, Any] = json.loads(result.stdout)
    assert result.returncode == (0 if report["healthy"] else 3), result.stderr
    return report


def kinds(cli: Cli) -> dict[str, str]:
    report = doctor(cli)
    findings = report["findings"]
    assert isinstance(findings, list)
    return {Path(item["path"]).name: item["kind"] for item in findings}


def test_a_killed_writers_temp_file_is_removed_by_the_next_write_once_stale(
    cli: Cli, home: Path, project_dir: Path, tmp_path: Path
) -> None:
    cli.ok("project", "init")
    notes_dir = project_dir / "MEMORY"
    notes_dir.mkdir(exist_ok=True)
    lock_path = HomeLayout(home).lock_path_for(notes_dir)
    writer = CrashWriter(tmp_path, notes_dir, lock_path)
    try:
        temp = kill_mid_write(writer, notes_dir)
    finally:
        writer.close()
    foreign = notes_dir / ".draft.tmp"  # a hidden .tmp file that is not ours
    foreign.write_bytes(b"someone else's")
    age(foreign, 2 * STALE_TEMP_AGE_MS)

    # Fresh: a write in progress, not a problem; a write beside it leaves it alone.
    assert kinds(cli)[temp.name] == "write_in_progress"
    assert doctor(cli)["healthy"] is False  # only the foreign file
    cli.ok("memory", "remember", "-s", "Written beside a fresh temp file", "-b", "One.")
    assert temp.exists()

    # Stale: reported as left by a killed write, and the next write removes it.
    age(temp, STALE_TEMP_AGE_MS + 60_000)
    assert kinds(cli)[temp.name] == "stray_temp"
    cli.ok("memory", "remember", "-s", "Written after the temp file went stale", "-b", "Two.")
    assert not temp.exists()
    assert foreign.read_bytes() == b"someone else's"
    assert kinds(cli) == {foreign.name: "stray_temp"}
    notes = [name for name in os.listdir(notes_dir) if name.endswith(".md")]
    # the two written since, beside whatever the killed writers had finished, each one whole
    assert sum(name.startswith("written-") for name in notes) == 2
    for name in notes:
        parse_note_bytes((notes_dir / name).read_bytes())
