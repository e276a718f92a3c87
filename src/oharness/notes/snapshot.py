"""A machine-local copy of a notes folder's parsed notes, so a new process does not parse
every file again.

Parsing and checking a note costs about 0.2 ms; a command that needs every note of a folder of
10,000 (``remember`` checks them for an exact duplicate) spent two seconds on it in each new
process. The snapshot keeps, per file, what parsing it gave, with the file's ``stat`` at that
time; a process lists the folder as before and takes a note from the snapshot only when the
file's mtime, ctime, size and inode are all the same as then. Any write changes the ctime, so
a file edited since (by an editor, ``git checkout``, a sync pull) is parsed again. A file
changed within :data:`RACY_WINDOW_NS` before the snapshot was written is left out of it (its
time stamp could be shared by a second write in the same tick, as git's "racy" index entries).

The file lives in the home's ``cache`` folder (``notes-<digest>.marshal``, the digest naming
the folder's real path), is written atomically, carries a CRC-32 of its body, and anything
unexpected in it (another format, a cut file, a foreign file) makes it unused, never an error:
it is derived data, rebuilt from the notes.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import time
import zlib
from pathlib import Path
from typing import Final

from oharness.errors import StorageError
from oharness.fsio import atomic_write
from oharness.notes.format import Note
from oharness.notes.stored import FileStamp, StoredNote
from oharness.notes.tempfiles import remove_dead_writes
from oharness.types import Scope

_TAG: Final = b"OHNS"
_FORMAT: Final = 1
#: A file changed this close before the snapshot is written is parsed again next time.
RACY_WINDOW_NS: Final = 2_000_000_000
#: A process writes the snapshot again once it parsed this many files itself.
REWRITE_AFTER: Final = 64

#: One file's entry: ``(mtime_ns, ctime_ns, size, inode, revision, digest, links, fields)``.
_Entry = tuple[int, int, int, int, str, str, tuple[str, ...], tuple[object, ...]]


def snapshot_path(cache_dir: Path, scope: Scope, directory: Path) -> Path:
    """Where the snapshot of ``directory`` (holding ``scope`` notes) lives in ``cache_dir``."""
    key = f"{scope}={os.path.realpath(directory)}".encode("utf-8", "surrogatepass")
    return cache_dir / f"notes-{hashlib.sha256(key).hexdigest()[:24]}.marshal"


class NoteSnapshot:
    """The snapshot of one folder: :meth:`take` a file's note, :meth:`save` the loaded ones."""

    def __init__(self, path: Path, scope: Scope) -> None:
        self.path = path
        self.scope: Scope = scope
        self._entries: dict[str, _Entry] | None = None

    def take(self, name: str, path: Path, st: os.stat_result) -> StoredNote | None:
        """The note the snapshot holds for file ``name`` if the file is unchanged since."""
        if self._entries is None:
            self._entries = _read(self.path)
        entry = self._entries.get(name)
        if entry is None:
            return None
        try:
            mtime, ctime, size, inode, revision, digest, links, fields = entry
            now = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
            if (mtime, ctime, size, inode) != now:
                return None
            note = Note(*fields)  # type: ignore[arg-type]
        except (ValueError, TypeError):
            return None  # not the shape this version writes
        stored = StoredNote(note, self.scope, path, FileStamp.of(st), revision, links)
        stored.__dict__["digest_without_id"] = digest  # its cached_property, already known
        return stored

    def save(self, notes: list[tuple[StoredNote, os.stat_result]]) -> None:
        """Write the snapshot of these notes (a failure to write is ignored: it is a cache)."""
        since = time.time_ns() - RACY_WINDOW_NS
        entries: dict[str, _Entry] = {}
        for stored, st in notes:
            if st.st_mtime_ns >= since or st.st_ctime_ns >= since:
                continue
            note = stored.note
            fields = (
                note.id,
                note.summary,
                note.body,
                tuple(note.tags),
                note.type,
                note.created_at,
                note.updated_at,
                dict(note.extra),
            )
            entries[stored.path.name] = (
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_size,
                st.st_ino,
                stored.revision,
                stored.digest_without_id,
                tuple(stored.links),
                fields,
            )
        body = marshal.dumps((_FORMAT, entries))
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # What killed writers left first: a writer killed every time still clears them.
            remove_dead_writes(self.path)
            framed = _TAG + zlib.crc32(body).to_bytes(4, "little") + body
            atomic_write(self.path, framed, mode=0o600)  # note text: never for other users
        except (OSError, StorageError):
            return
        self._entries = entries


def _read(path: Path) -> dict[str, _Entry]:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    body = memoryview(data)[len(_TAG) + 4 :]
    if data[: len(_TAG)] != _TAG or data[len(_TAG) : len(_TAG) + 4] != zlib.crc32(body).to_bytes(
        4, "little"
    ):
        return {}
    try:
        version, entries = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return {}
    if version != _FORMAT or not isinstance(entries, dict):
        return {}
    return entries
