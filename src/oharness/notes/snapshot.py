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

The file has two parts: the head, every file's stamp and content digest without id (all that
``remember``'s exact-duplicate check needs, a twentieth of the file), and the rest, every
file's note; a process reads only the part it needs. It lives in the home's ``cache`` folder
(``notes-<digest>.marshal``, the digest naming the folder's real path), is written
atomically, carries a CRC-32 of each part, and anything unexpected in it (another format, a
cut file, a foreign file) makes it unused, never an error: it is derived data, rebuilt from
the notes.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import struct
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

from oharness.errors import StorageError
from oharness.fsio import atomic_write
from oharness.notes.format import Note
from oharness.notes.stored import FileStamp, StoredNote
from oharness.notes.tempfiles import remove_dead_writes
from oharness.types import Scope

_TAG: Final = b"OHN2"
_FORMAT: Final = 2
#: The tag, the head's size (8 bytes), the CRC-32 of the head and of the rest (4 bytes each).
_PREAMBLE: Final = len(_TAG) + 16
#: A file changed this close before the snapshot is written is parsed again next time.
RACY_WINDOW_NS: Final = 2_000_000_000
#: A process writes the snapshot again once it parsed this many files itself.
REWRITE_AFTER: Final = 64

#: One file's entry: ``(mtime_ns, ctime_ns, size, inode, revision, digest, links, fields)``.
_Entry = tuple[int, int, int, int, str, str, tuple[str, ...], tuple[object, ...]]
#: One file's line of the head: its ``mtime_ns``, ``ctime_ns``, size and inode packed, then
#: the SHA-256 of its content without id (bytes: the head of 50,000 loads in about 20 ms).
_STAMP: Final = struct.Struct("<qqQQ")
_DIGEST_PREFIX: Final = "sha256:"


class Unchanged(NamedTuple):
    """The files the snapshot vouches for, and those of them holding the content sought."""

    names: set[str]
    matching: list[str]


def _raw_digest(digest: str) -> bytes | None:
    """The 32 bytes of a ``sha256:<hex>`` digest (None for any other form)."""
    if not digest.startswith(_DIGEST_PREFIX):
        return None
    try:
        raw = bytes.fromhex(digest[len(_DIGEST_PREFIX) :])
    except ValueError:
        return None
    return raw if len(raw) == 32 else None


def snapshot_path(cache_dir: Path, scope: Scope, directory: Path) -> Path:
    """Where the snapshot of ``directory`` (holding ``scope`` notes) lives in ``cache_dir``."""
    key = f"{scope}={os.path.realpath(directory)}".encode("utf-8", "surrogatepass")
    return cache_dir / f"notes-{hashlib.sha256(key).hexdigest()[:24]}.marshal"


class NoteSnapshot:
    """The snapshot of one folder: which files are :meth:`unchanged` and hold some content, a
    file's note (:meth:`take`); :meth:`save` the loaded ones."""

    def __init__(self, path: Path, scope: Scope) -> None:
        self.path = path
        self.scope: Scope = scope
        self._heads: dict[str, bytes] | None = None
        self._entries: dict[str, _Entry] | None = None

    def unchanged(
        self, files: Mapping[str, tuple[object, os.stat_result]], digest: str
    ) -> Unchanged:
        """Which of these files (by name, with their ``stat``) are unchanged since the snapshot
        was written, and which of those hold content with this digest (without id): all the
        exact-duplicate check needs, read from the snapshot's head only."""
        if self._heads is None:
            self._heads = _read_part(self.path, rest=False)
        heads, stamp = self._heads, _STAMP.pack
        wanted = _raw_digest(digest)
        unchanged: set[str] = set()
        matching: list[str] = []
        try:
            for name, (_, st) in files.items():
                head = heads.get(name)
                if head is not None and head.startswith(
                    stamp(st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
                ):
                    unchanged.add(name)
                    if wanted is not None and head.endswith(wanted):
                        matching.append(name)
        except (AttributeError, TypeError, struct.error):
            return Unchanged(set(), [])  # not the shape this version writes: vouch for none
        return Unchanged(unchanged, matching)

    def take(self, name: str, path: Path, st: os.stat_result) -> StoredNote | None:
        """The note the snapshot holds for file ``name`` if the file is unchanged since."""
        if self._entries is None:
            self._entries = _read_part(self.path, rest=True)
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
        heads: dict[str, bytes] = {}
        for name, entry in entries.items():
            raw = _raw_digest(entry[5])
            if raw is not None:
                heads[name] = _STAMP.pack(*entry[:4]) + raw
        head, rest = marshal.dumps((_FORMAT, heads)), marshal.dumps((_FORMAT, entries))
        framed = b"".join(
            [
                _TAG,
                len(head).to_bytes(8, "little"),
                zlib.crc32(head).to_bytes(4, "little"),
                zlib.crc32(rest).to_bytes(4, "little"),
                head,
                rest,
            ]
        )
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # What killed writers left first: a writer killed every time still clears them.
            remove_dead_writes(self.path)
            atomic_write(self.path, framed, mode=0o600)  # note text: never for other users
        except (OSError, StorageError):
            return
        self._heads, self._entries = heads, entries


def _read_part(path: Path, *, rest: bool) -> dict[str, Any]:
    """The head of the file (every file's stamp and digest) or the rest (every file's note);
    each part has its own CRC-32, so a process reads only the part it needs. Each entry
    carries the file's stamp: a rest read from a file that replaced the one the head came
    from is still checked file by file. Empty when anything is off (derived data)."""
    try:
        with path.open("rb") as file:
            preamble = file.read(_PREAMBLE)
            if len(preamble) != _PREAMBLE or preamble[: len(_TAG)] != _TAG:
                return {}
            size = int.from_bytes(preamble[len(_TAG) : len(_TAG) + 8], "little")
            crc_at = len(_TAG) + (12 if rest else 8)
            if rest:
                file.seek(_PREAMBLE + size)
                data = file.read()
            else:
                data = file.read(size)
                if len(data) != size:
                    return {}
    except OSError:
        return {}
    if zlib.crc32(data).to_bytes(4, "little") != preamble[crc_at : crc_at + 4]:
        return {}
    try:
        version, entries = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    if version != _FORMAT or not isinstance(entries, dict):
        return {}
    return entries
