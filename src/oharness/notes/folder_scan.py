"""Reading a notes folder's entries: its listing (names and inode numbers) and a sweep (a
``stat`` of every note file). :class:`~oharness.notes.note_cache.NoteCache` decides when."""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from oharness.fsio import is_temp_name
from oharness.notes.stored import FileStamp, LoadProblem

NOTE_SUFFIX: Final = ".md"

#: Name -> inode number of every note file in the folder, as a listing shows it.
Listing = dict[str, int]


@dataclass
class FolderScan:
    """What one pass over the folder's entries found."""

    #: The stamp of every note file (a regular file, or a symlink to one inside), by name.
    stamps: dict[str, FileStamp]
    #: Its path (a string: most are never read, so no ``Path`` is made) and ``stat``.
    files: dict[str, tuple[str, os.stat_result]]
    problems: dict[str, LoadProblem]
    #: Temp files left by writers (ours are named ``.<name>.<hex>.tmp``).
    stray: list[Path]
    listing: Listing

    @classmethod
    def empty(cls) -> FolderScan:
        """What a folder that does not exist holds."""
        return cls({}, {}, {}, [], {})


def scan_folder(directory: Path) -> FolderScan:
    """List the folder and ``stat`` every note file in it (a folder of 50,000 is swept in a
    new process, so the common case, a regular file, goes first)."""
    scan = FolderScan.empty()
    real_dir = os.path.realpath(directory)
    listing, stamps, files = scan.listing, scan.stamps, scan.files
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                if is_temp_name(name):
                    scan.stray.append(Path(entry.path))
                continue
            if not name.endswith(NOTE_SUFFIX):
                continue
            listing[name] = entry.inode()
            try:
                found: os.stat_result | None = entry.stat(follow_symlinks=False)
            except OSError:
                found = None
            if found is None or not stat.S_ISREG(found.st_mode):
                found = _checked_stat(entry, real_dir, scan.problems)  # says why, or follows
            if found is not None:
                stamps[name] = FileStamp(found.st_mtime_ns, found.st_size, found.st_ino)
                files[name] = (entry.path, found)
    return scan


def _checked_stat(
    entry: os.DirEntry[str], real_dir: str, problems: dict[str, LoadProblem]
) -> os.stat_result | None:
    """The ``stat`` of a regular file or of a symlink's target inside the folder; None for
    anything else, with the reason in ``problems`` when it is one."""
    try:
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(entry.path)
            if os.path.commonpath([real, real_dir]) != real_dir:
                problems[entry.name] = LoadProblem(
                    Path(entry.path),
                    "symlink_outside",
                    "a symlink pointing outside the notes folder; it is not loaded: put the "
                    f"file itself there (cp --remove-destination {shlex.quote(real)} "
                    f"{shlex.quote(entry.path)}), or remove the link",
                )
                return None
            st = os.stat(entry.path)
        if not stat.S_ISREG(st.st_mode):
            return None
        return st
    except OSError as exc:
        problems[entry.name] = LoadProblem(
            Path(entry.path), "unreadable", f"cannot be read: {exc.strerror or exc}"
        )
        return None


@dataclass(frozen=True)
class FolderListing:
    """The note files' names and inodes, and the temp files left by writers."""

    names: Listing
    stray: list[Path]


def list_folder(directory: Path) -> FolderListing | None:
    """Names and inode numbers only, no ``stat`` per file; None when it cannot be listed."""
    names: Listing = {}
    hidden: list[os.DirEntry[str]] = []
    try:
        with os.scandir(directory) as scan:
            for entry in scan:
                name = entry.name
                if name[0] == ".":
                    hidden.append(entry)
                elif name.endswith(NOTE_SUFFIX):
                    names[name] = entry.inode()
    except OSError:
        return None
    return FolderListing(names, [Path(entry.path) for entry in hidden if is_temp_name(entry.name)])
