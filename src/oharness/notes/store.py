"""The note store: one scope directory, its in-process cache and its cross-process lock (01.7).

Reading: :meth:`NoteStore.refresh` keeps an in-process cache in step with the disk. A cheap
check (one ``stat`` of the directory) runs on every call; a full sweep (``stat`` of every file)
runs when the directory changed, or on request (``full=True``: writers, sync, doctor). Every
``sweep_interval`` seconds a rotating slice of the files (a sixteenth, at least 256) is checked
too, and any difference triggers a full sweep. Creations, deletions and renames (which is how
most editors save) are therefore seen at once; an in-place rewrite by another program within
``sweep_interval`` in folders of up to 256 notes, within sixteen intervals in larger ones —
while a recall at 5,000 notes costs a few hundred ``stat`` calls at most, not 5,000. Only
changed files are parsed again.

Writing: every writer takes the directory's lock (an OS file lock, so it holds across threads
and processes) and writes with :func:`oharness.fsio.atomic_write`. Taking the lock removes the
temp files that killed writers left, once they are old enough (:mod:`oharness.notes.tempfiles`).

Files that cannot be read as notes are skipped, reported in :meth:`NoteStore.problems` and
never touched.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Final

import filelock

from oharness.errors import (
    ConflictError,
    LimitError,
    NoteFormatError,
    NotFoundError,
    PathSafetyError,
    StorageError,
)
from oharness.fsio import atomic_write, is_temp_name, remove_file
from oharness.notes.format import Note, file_revision, parse_note_bytes, serialise_note_bytes
from oharness.notes.ids import check_id
from oharness.notes.links import extract_links
from oharness.notes.tempfiles import is_own_temp_name, is_stale_temp, remove_stale_temp_files
from oharness.types import Clock, Scope

NOTE_SUFFIX: Final = ".md"
_RACY_WINDOW_NS: Final = 2_000_000_000
#: Files checked per interval between full sweeps: a share of them, at least this many.
_SPOT_CHECK_ROUNDS: Final = 16
_SPOT_CHECK_MIN: Final = 256
#: While the folder's mtime is too recent to be trusted, sweep again at most this often (s).
_RACY_RESWEEP: Final = 0.05


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class FileStamp:
    """What identifies one version of a file cheaply: mtime, size and inode."""

    mtime_ns: int
    size: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(st.st_mtime_ns, st.st_size, st.st_ino)


@dataclass(frozen=True)
class StoredNote:
    """A note as loaded from its file, with where it lives and its derived links."""

    note: Note
    scope: Scope
    path: Path
    stamp: FileStamp
    revision: str
    links: tuple[str, ...]

    @property
    def id(self) -> str:
        return self.note.id

    @cached_property
    def digest_without_id(self) -> str:
        """The content digest without id (cached: exact-duplicate checks run on every write)."""
        return self.note.content_hash_without_id


@dataclass(frozen=True)
class LoadProblem:
    """A file in the scope directory that was skipped, and why (never touched by us)."""

    path: Path
    reason: str
    message: str


class NoteStore:
    """All notes of one scope directory."""

    def __init__(
        self,
        directory: Path,
        *,
        scope: Scope,
        lock_path: Path,
        max_notes: int = 5000,
        lock_timeout: float = 30.0,
        sweep_interval: float = 2.0,
        monotonic: Callable[[], float] = time.monotonic,
        wall_ns: Callable[[], int] = time.time_ns,
        wall_clock: Clock = _wall_ms,
    ) -> None:
        self.directory = directory
        self.scope: Scope = scope
        self.max_notes = max_notes
        self._lock = filelock.FileLock(lock_path, timeout=lock_timeout)
        self._lock_path = lock_path
        self._sweep_interval = sweep_interval
        self._monotonic = monotonic
        self._wall_ns = wall_ns  # compared with file system times (nanoseconds since the epoch)
        self._wall_clock = wall_clock
        self._by_name: dict[str, StoredNote] = {}
        self._by_id: dict[str, StoredNote] = {}
        self._by_folded: dict[str, StoredNote] = {}
        self._problems: dict[str, LoadProblem] = {}
        self._unloaded: list[Path] = []
        self._skipped: dict[str, tuple[FileStamp, LoadProblem]] = {}
        self._file_total = 0
        self._stray_temp: list[Path] = []
        self._dir_stamp: int | None = None
        self._racy = False
        self._rotation: list[tuple[Path, FileStamp]] = []
        self._rotation_at = 0
        self._sweep_end = 0.0
        self._last_sweep: float | None = None
        self._real_dir: str | None = None
        self._generation = 0
        self._batch_depth = 0
        self._lock_depth = 0
        self._removed_temp: list[Path] = []

    # ---- reading -------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Increases whenever the loaded set of notes changes (for derived caches)."""
        return self._generation

    def refresh(self, *, full: bool = False) -> bool:
        """Bring the cache in step with the disk; True when anything changed."""
        try:
            dir_mtime = os.stat(self.directory).st_mtime_ns
        except FileNotFoundError:
            dir_mtime = None
        now = self._monotonic()
        stale = (
            full
            or self._last_sweep is None
            or dir_mtime != self._dir_stamp
            or (self._racy and now - self._sweep_end >= _RACY_RESWEEP)
        )
        if not stale:
            last = self._last_sweep or 0.0
            if now - last < self._sweep_interval:
                return False
            # In-place rewrites leave the folder's mtime alone: check a rotating slice of the
            # files (all of them within a few intervals) and sweep fully only on a difference.
            self._last_sweep = now
            if not self._spot_check():
                return False
        changed = self._sweep(dir_mtime)
        self._last_sweep = now
        self._sweep_end = self._monotonic()
        # A directory changed within the clock's granularity may change again unseen with the
        # same mtime: only trust the stamp once it is safely in the past.
        self._racy = dir_mtime is not None and self._wall_ns() - dir_mtime < _RACY_WINDOW_NS
        self._dir_stamp = dir_mtime
        return changed

    def _spot_check(self) -> bool:
        """True when one of the next files in rotation changed since it was loaded."""
        rotation = self._rotation
        if not rotation:
            return False
        size = min(len(rotation), max(_SPOT_CHECK_MIN, len(rotation) // _SPOT_CHECK_ROUNDS))
        start = self._rotation_at % len(rotation)
        self._rotation_at = start + size
        for index in range(start, start + size):
            path, stamp = rotation[index % len(rotation)]
            try:
                current = FileStamp.of(os.stat(path))
            except OSError:
                return True
            if current != stamp:
                return True
        return False

    def notes(self) -> list[StoredNote]:
        """Every loaded note (after a cheap refresh)."""
        self.refresh()
        return list(self._by_id.values())

    def get(self, note_id: str) -> StoredNote | None:
        """The note with exactly this id, if loaded."""
        self.refresh()
        return self._by_id.get(note_id)

    def get_folded(self, note_id: str) -> StoredNote | None:
        """The note whose id equals ``note_id`` ignoring letter case, if loaded."""
        self.refresh()
        return self._by_folded.get(note_id.casefold())

    def problems(self) -> list[LoadProblem]:
        """Files skipped at load: malformed, misnamed, escaping symlinks, case collisions."""
        self.refresh()
        return sorted(self._problems.values(), key=lambda problem: problem.path.name)

    def unloaded(self) -> list[Path]:
        """Note files not loaded because ``maxNotes`` was reached (least recently modified)."""
        self.refresh()
        return list(self._unloaded)

    def stray_temp_files(self) -> list[Path]:
        """Temp files left by interrupted writes (never loaded as notes)."""
        self.refresh()
        return list(self._stray_temp)

    def is_stale_temp(self, path: Path) -> bool:
        """A temp file of ours old enough to be a dead write (removed under the write lock);
        a younger one may be a write in progress."""
        return is_stale_temp(path, self._wall_clock())

    def remove_stale_temp_files(self) -> list[Path]:
        """Take the write lock, which removes our stale temp files; returns the ones removed."""
        with self.locked():
            return list(self._removed_temp)

    def file_count(self) -> int:
        """Note files in the folder: loaded, unloaded or unreadable (what ``maxNotes`` counts)."""
        self.refresh()
        return self._file_total

    def read_bytes(self, note_id: str) -> bytes:
        """The exact bytes of a loaded note's file."""
        stored = self.get(note_id)
        if stored is None:
            raise NotFoundError(f"no note {note_id!r} in the {self.scope} scope", id=note_id)
        try:
            return stored.path.read_bytes()
        except OSError as exc:
            raise StorageError(
                f"could not read {stored.path}: {exc}", path=str(stored.path)
            ) from exc

    def _sweep(self, dir_mtime: int | None) -> bool:
        entries: list[tuple[str, Path, os.stat_result]] = []
        problems: dict[str, LoadProblem] = {}
        stray: list[Path] = []
        if dir_mtime is not None:
            self._real_dir = os.path.realpath(self.directory)
            with os.scandir(self.directory) as scan:
                for entry in scan:
                    name = entry.name
                    if is_temp_name(name):
                        stray.append(Path(entry.path))
                        continue
                    if name.startswith(".") or not name.endswith(NOTE_SUFFIX):
                        continue
                    checked = self._checked_stat(entry, problems)
                    if checked is not None:
                        entries.append((name, Path(entry.path), checked))
        entries.sort(key=lambda item: (-item[2].st_mtime_ns, item[0]))
        loaded, unloaded = entries[: self.max_notes], entries[self.max_notes :]
        previous = self._by_name
        by_name: dict[str, StoredNote] = {}
        skipped: dict[str, tuple[FileStamp, LoadProblem]] = {}
        for name, path, st in loaded:
            stamp = FileStamp.of(st)
            cached = previous.get(name)
            if cached is not None and cached.stamp == stamp:
                by_name[name] = cached
                continue
            known = self._skipped.get(name)
            if known is not None and known[0] == stamp:
                skipped[name] = known  # still the same unreadable file: no need to parse again
                continue
            stored = self._load_file(name, path, stamp, st, problems)
            if stored is not None:
                by_name[name] = stored
            else:
                skipped[name] = (stamp, problems[name])
        problems.update({name: problem for name, (_, problem) in skipped.items()})
        self._skipped = skipped
        self._file_total = len(entries)
        self._rotation = [(path, FileStamp.of(st)) for _, path, st in loaded]
        self._install(by_name, problems, [path for _, path, _ in unloaded], stray)
        changed = by_name.keys() != previous.keys() or any(
            by_name[name] is not previous[name] for name in by_name
        )
        if changed:
            self._generation += 1
        return changed

    def _checked_stat(
        self, entry: os.DirEntry[str], problems: dict[str, LoadProblem]
    ) -> os.stat_result | None:
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(entry.path)
                assert self._real_dir is not None
                if os.path.commonpath([real, self._real_dir]) != self._real_dir:
                    problems[entry.name] = LoadProblem(
                        Path(entry.path),
                        "symlink_outside",
                        "a symlink pointing outside the notes folder; it is not loaded",
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

    def _load_file(
        self,
        name: str,
        path: Path,
        stamp: FileStamp,
        st: os.stat_result,
        problems: dict[str, LoadProblem],
    ) -> StoredNote | None:
        try:
            data = path.read_bytes()
            note = parse_note_bytes(data, default_time=st.st_mtime_ns // 1_000_000)
        except OSError as exc:
            problems[name] = LoadProblem(path, "unreadable", f"cannot be read: {exc.strerror}")
            return None
        except NoteFormatError as exc:
            problems[name] = LoadProblem(path, str(exc.details.get("reason")), exc.message)
            return None
        if name != note.id + NOTE_SUFFIX:
            problems[name] = LoadProblem(
                path,
                "name_mismatch",
                f"the file name does not match its id {note.id!r}: rename it to {note.id}.md",
            )
            return None
        return StoredNote(
            note=note,
            scope=self.scope,
            path=path,
            stamp=stamp,
            revision=file_revision(data),
            links=extract_links(note.body),
        )

    def _install(
        self,
        by_name: dict[str, StoredNote],
        problems: dict[str, LoadProblem],
        unloaded: list[Path],
        stray: list[Path],
    ) -> None:
        by_id: dict[str, StoredNote] = {}
        by_folded: dict[str, StoredNote] = {}
        # The oldest file keeps its place; a later one differing only by case is reported.
        for stored in sorted(by_name.values(), key=lambda s: (s.stamp.mtime_ns, s.id)):
            folded = stored.id.casefold()
            other = by_folded.get(folded)
            if other is not None:
                problems[stored.path.name] = LoadProblem(
                    stored.path,
                    "case_collision",
                    f"its id differs from {other.id!r} only by letter case, which macOS and "
                    "Windows cannot hold side by side; rename one of them",
                )
                continue
            by_folded[folded] = stored
            by_id[stored.id] = stored
        self._by_name = by_name
        self._by_id = by_id
        self._by_folded = by_folded
        self._problems = problems
        self._unloaded = unloaded
        self._stray_temp = stray

    def _clean_temp_files(self) -> None:
        """Under the write lock: remove our stale temp files (no writer can be mid-write in
        them: a write older than :data:`STALE_TEMP_AGE_MS` is a dead one)."""
        candidates: list[Path] = []
        with (
            contextlib.suppress(FileNotFoundError, NotADirectoryError),
            os.scandir(self.directory) as scan,
        ):
            candidates = [Path(entry.path) for entry in scan if is_own_temp_name(entry.name)]
        self._removed_temp = remove_stale_temp_files(candidates, self._wall_clock())
        if self._removed_temp:
            self._dir_stamp = None
            self._stray_temp = [p for p in self._stray_temp if p not in self._removed_temp]

    # ---- writing -------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold this directory's write lock (re-entrant; across threads and processes)."""
        try:
            self._lock_path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except filelock.Timeout as exc:
            raise StorageError(
                f"the {self.scope} notes are being written by another process (lock "
                f"{self._lock_path}); try again in a moment",
                path=str(self._lock_path),
            ) from exc
        except OSError as exc:
            raise StorageError(
                f"cannot take the notes lock {self._lock_path}: {exc.strerror or exc}",
                path=str(self._lock_path),
            ) from exc
        self._lock_depth += 1
        try:
            if self._lock_depth == 1:
                self._clean_temp_files()
            yield
        finally:
            self._lock_depth -= 1
            self._lock.release()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the lock for many writes with one full re-read at the start, not one per write.

        Inside a batch no other oharness writer can interleave (they wait for the lock), so the
        cache stays exact; writes that pass ``expect_revision`` still check the file on disk.
        """
        with self.locked():
            self.refresh(full=True)
            self._batch_depth += 1
            try:
                yield
            finally:
                self._batch_depth -= 1

    def _check_revision(self, path: Path, note_id: str, expect_revision: str | None) -> None:
        """Compare-and-swap: refuse when the file is no longer the version the caller read."""
        if expect_revision is None:
            return
        try:
            current = file_revision(path.read_bytes())
        except FileNotFoundError:
            current = None
        if current != expect_revision:
            raise ConflictError(
                f"note {note_id!r} changed on disk while it was being updated; nothing was "
                "replaced (the next pass sees the new version)",
                id=note_id,
            )

    def path_for(self, note_id: str) -> Path:
        """The file path of a note id, refusing anything that is not a safe id."""
        check_id(note_id)
        path = self.directory / (note_id + NOTE_SUFFIX)
        if path.is_symlink():
            real = os.path.realpath(path)
            base = os.path.realpath(self.directory)
            if os.path.commonpath([real, base]) != base:
                raise PathSafetyError(
                    f"{path} is a symlink pointing outside the notes folder; remove it first",
                    path=str(path),
                )
        return path

    def save(self, note: Note, *, create: bool) -> StoredNote:
        """Write a note. ``create`` refuses existing ids; otherwise the note must exist."""
        return self.save_bytes(note.id, serialise_note_bytes(note), create=create)

    def save_bytes(
        self,
        note_id: str,
        data: bytes,
        *,
        create: bool,
        expect_revision: str | None = None,
        on_durable: Callable[[], None] | None = None,
    ) -> StoredNote:
        """Write a note file's exact bytes (they must parse as a note with this id).

        ``expect_revision``: only replace the file if it still is that version (see
        :func:`~oharness.notes.format.file_revision`). ``on_durable`` runs as soon as the file
        is durably in place (see :func:`oharness.fsio.atomic_write`).
        """
        check_id(note_id)
        note = parse_note_bytes(data)
        if note.id != note_id:
            raise ConflictError(f"the file's id {note.id!r} does not match {note_id!r}", id=note_id)
        path = self.path_for(note_id)
        with self.locked():
            if not self._batch_depth:
                self.refresh(full=True)
            self._check_write(note_id, create)
            self._check_revision(path, note_id, expect_revision)
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data, on_durable=on_durable)
            st = os.stat(path)
            stored = StoredNote(
                note=note,
                scope=self.scope,
                path=path,
                stamp=FileStamp.of(st),
                revision=file_revision(data),
                links=extract_links(note.body),
            )
            self._remember_written(stored)
            return stored

    def _check_write(self, note_id: str, create: bool) -> None:
        existing = self._by_id.get(note_id)
        folded = self._by_folded.get(note_id.casefold())
        if folded is not None and folded.id != note_id:
            raise ConflictError(
                f"id {note_id!r} differs from the existing note {folded.id!r} only by letter "
                "case; macOS and Windows cannot hold both: choose another id",
                id=note_id,
                existing=folded.id,
            )
        if create:
            if existing is not None or (self.directory / (note_id + NOTE_SUFFIX)).exists():
                raise ConflictError(f"a note {note_id!r} already exists", id=note_id)
            count = self._file_total
            if count >= self.max_notes:
                raise LimitError(
                    f"the {self.scope} scope holds {count} notes, the limit "
                    f"(memory.maxNotes = {self.max_notes}); forget or merge some notes, or raise "
                    "the limit; updates and deletes still work",
                    limit=self.max_notes,
                )
        elif existing is None:
            raise NotFoundError(
                f"no note {note_id!r} in the {self.scope} scope to update; leave out the id "
                "to create a new note",
                id=note_id,
            )

    def _remember_written(self, stored: StoredNote) -> None:
        # One note changed under the lock, with collisions already refused: update the cache
        # in place (a batch of thousands of writes must not re-sort everything each time).
        name = stored.path.name
        if name not in self._by_name:
            self._file_total += 1
        self._by_name[name] = stored
        self._by_id[stored.id] = stored
        self._by_folded[stored.id.casefold()] = stored
        self._dir_stamp = None  # our own rename changed the directory: sweep next time
        self._generation += 1

    def delete(self, note_id: str, *, expect_revision: str | None = None) -> None:
        """Remove a note's file (the caller writes a backup first); optionally only if it is
        still the version ``expect_revision``."""
        path = self.path_for(note_id)
        with self.locked():
            if not self._batch_depth:
                self.refresh(full=True)
            stored = self._by_id.get(note_id)
            if stored is None:
                raise NotFoundError(f"no note {note_id!r} in the {self.scope} scope", id=note_id)
            self._check_revision(path, note_id, expect_revision)
            remove_file(path)
            self._by_name.pop(stored.path.name, None)
            self._by_id.pop(stored.id, None)
            self._by_folded.pop(stored.id.casefold(), None)
            self._file_total -= 1
            self._dir_stamp = None
            self._generation += 1
