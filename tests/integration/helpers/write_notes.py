"""One of several processes writing notes into the same folder at once.

Usage: write_notes.py NOTES_DIR LOCK_PATH PREFIX COUNT

Prints ``ready`` and waits for a line on stdin (so all writers start together), then creates
COUNT notes ``PREFIX-<n>``, tries to create the shared note ``shared-1ab`` (printing
``created`` or ``conflict``), updates each of its notes once and prints ``done``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from oharness.errors import ConflictError
from oharness.notes.format import Note
from oharness.notes.store import NoteStore


def main() -> None:
    directory, lock_path, prefix, count = (
        Path(sys.argv[1]),
        Path(sys.argv[2]),
        sys.argv[3],
        int(sys.argv[4]),
    )
    store = NoteStore(directory, scope="project", lock_path=lock_path)
    print("ready", flush=True)
    sys.stdin.readline()
    for n in range(count):
        note = Note(id=f"{prefix}-{n}", summary=f"{prefix} note {n}", body=f"first {prefix} {n}\n")
        store.save(note, create=True)
    try:
        store.save(Note(id="shared-1ab", summary="shared", body=f"by {prefix}\n"), create=True)
        print("created", flush=True)
    except ConflictError:
        print("conflict", flush=True)
    for n in range(count):
        note = Note(id=f"{prefix}-{n}", summary=f"{prefix} note {n}", body=f"final {prefix} {n}\n")
        store.save(note, create=False)
    print("done", flush=True)


if __name__ == "__main__":
    main()
