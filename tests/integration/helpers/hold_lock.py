"""Hold a notes folder's write lock until stdin says to let go.

Usage: hold_lock.py NOTES_DIR LOCK_PATH

Prints ``held`` once the lock is taken, then waits for a line (or end of input) on stdin,
releases the lock, prints ``released`` and exits.
"""

from __future__ import annotations

import sys
from pathlib import Path

from oharness.notes.store import NoteStore


def main() -> None:
    store = NoteStore(Path(sys.argv[1]), scope="project", lock_path=Path(sys.argv[2]))
    with store.locked():
        print("held", flush=True)
        sys.stdin.readline()
    print("released", flush=True)


if __name__ == "__main__":
    main()
