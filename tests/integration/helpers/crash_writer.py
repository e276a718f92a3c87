"""Fork writers that rewrite one note forever, for a test to kill at random moments.

Usage: crash_writer.py NOTES_DIR LOCK_PATH VERSION_A VERSION_B

VERSION_A and VERSION_B are files holding the two note file versions (same id). For each
``spawn`` line on stdin this process forks a child that prints ``child <pid>``, then saves
version A, B, A, ... through ``NoteStore.save`` until it is killed. The child prints
``saving`` before each save, ``fsync`` as each fsync starts (so the test can also kill it
while the temp file exists or right after the rename) and ``saved`` after it. The parent
reaps the child and prints ``dead``. A line ``quit`` (or end of input) ends the parent.
Forking avoids paying interpreter start-up for every round.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from oharness.notes.format import parse_note_bytes
from oharness.notes.store import NoteStore


def announce_fsyncs() -> None:
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        print("fsync", flush=True)
        real_fsync(fd)

    os.fsync = fsync  # type: ignore[assignment]  # the real one also takes file objects


def rewrite_forever(directory: Path, lock_path: Path, versions: list[bytes]) -> None:
    announce_fsyncs()
    notes = [parse_note_bytes(data) for data in versions]
    store = NoteStore(directory, scope="project", lock_path=lock_path)
    print(f"child {os.getpid()}", flush=True)
    turn = 0
    while True:
        note = notes[turn % 2]
        print("saving", flush=True)
        store.save(note, create=store.get(note.id) is None)
        print("saved", flush=True)
        turn += 1


def main() -> None:
    directory, lock_path = Path(sys.argv[1]), Path(sys.argv[2])
    versions = [Path(sys.argv[3]).read_bytes(), Path(sys.argv[4]).read_bytes()]
    for line in sys.stdin:
        if line.strip() != "spawn":
            break
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                rewrite_forever(directory, lock_path, versions)
            finally:
                os._exit(1)
        os.waitpid(pid, 0)
        print("dead", flush=True)


if __name__ == "__main__":
    main()
