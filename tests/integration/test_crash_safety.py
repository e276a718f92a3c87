"""A writer killed at any instant leaves the old note or the new one, never a torn file (01.7)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from oharness.fsio import is_temp_name
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.store import NoteStore

HELPERS = Path(__file__).resolve().parent / "helpers"
NOTE_ID = "big-note-1ab"
ROUNDS = 20
BODY_BYTES = 200_000


def version(letter: str) -> bytes:
    line = f"{letter * 79}\n"
    body = line * (BODY_BYTES // len(line))
    return serialise_note_bytes(
        Note(id=NOTE_ID, summary=f"Version {letter}", body=body, tags=(letter.lower(),))
    )


class CrashWriter:
    """Drives ``helpers/crash_writer.py``: forks writers on demand and reports their output."""

    def __init__(self, tmp_path: Path, notes_dir: Path, lock_path: Path) -> None:
        version_a, version_b = tmp_path / "a.md", tmp_path / "b.md"
        version_a.write_bytes(version("A"))
        version_b.write_bytes(version("B"))
        self._stderr = (tmp_path / "writer.stderr").open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(HELPERS / "crash_writer.py"),
                str(notes_dir),
                str(lock_path),
                str(version_a),
                str(version_b),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self.stderr_path = tmp_path / "writer.stderr"

    def line(self) -> str:
        assert self.process.stdout is not None
        text = self.process.stdout.readline().strip()
        if not text or text == "dead":
            pytest.fail(f"the writer stopped on its own: {self.stderr_path.read_text()}")
        return text

    def spawn(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write("spawn\n")
        self.process.stdin.flush()
        kind, pid = self.line().split()
        assert kind == "child"
        return int(pid)

    def wait_dead(self) -> None:
        assert self.process.stdout is not None
        while (text := self.process.stdout.readline().strip()) != "dead":
            assert text in {"saving", "fsync", "saved"}, text

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        assert self.process.stdout is not None
        self.process.stdout.close()
        self._stderr.close()


def test_a_killed_writer_never_leaves_a_torn_note(tmp_path: Path) -> None:
    notes_dir = tmp_path / "MEMORY"
    lock_path = tmp_path / "state" / "project.lock"
    versions = {version("A"): "A", version("B"): "B"}
    rng = random.Random(20240601)
    writer = CrashWriter(tmp_path, notes_dir, lock_path)
    left_temp = 0
    try:
        for _ in range(ROUNDS):
            pid = writer.spawn()
            # Let the child run a random number of steps, then kill it wherever it is: after
            # "saving" it is starting a save, after the first "fsync" of a save the temp file
            # exists, after the second the rename is done, after "saved" the save is complete.
            for _ in range(rng.randint(1, 16)):
                writer.line()
            os.kill(pid, signal.SIGKILL)
            writer.wait_dead()

            path = notes_dir / f"{NOTE_ID}.md"
            data = path.read_bytes()
            which = versions.get(data)
            assert which is not None, f"torn note file: {len(data)} bytes, neither A nor B"
            assert parse_note_bytes(data).id == NOTE_ID

            fresh = NoteStore(notes_dir, scope="project", lock_path=lock_path)
            [stored] = fresh.notes()
            assert stored.id == NOTE_ID
            assert serialise_note_bytes(stored.note) == data
            assert fresh.problems() == []
            temps = {notes_dir / name for name in os.listdir(notes_dir) if is_temp_name(name)}
            assert set(fresh.stray_temp_files()) == temps
            assert set(os.listdir(notes_dir)) == {path.name} | {temp.name for temp in temps}
            left_temp = len(temps)
    finally:
        writer.close()

    # A writer killed while holding the lock does not keep it: the next writer gets in.
    store = NoteStore(notes_dir, scope="project", lock_path=lock_path, lock_timeout=2.0)
    store.save(Note(id=NOTE_ID, summary="After the crashes", body="Calm.\n"), create=False)
    assert parse_note_bytes((notes_dir / f"{NOTE_ID}.md").read_bytes()).body == "Calm.\n"
    assert len(store.stray_temp_files()) == left_temp
