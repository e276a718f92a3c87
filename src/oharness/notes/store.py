"""The note store: one scope directory, its cache and its cross-process write lock (01.7).

Reading goes through the folder's :class:`~oharness.notes.note_cache.NoteCache` (one ``stat``
per read when nothing changed; see there how changes by other programs are noticed). What
needs no note's content (:meth:`NoteStore.stamps`, :meth:`NoteStore.get_one`, the counts)
reads no note file: a process that attaches two notes out of a thousand parses two.

Writing: every writer takes the directory's lock (an OS file lock, so it holds across threads
and processes), which brings the cache in step with the disk once, and writes with
:func:`oharness.fsio.atomic_write`; the store's own writes then update the cache in place, so a
write reads the folder at most once. Taking the lock removes the temp files that killed
writers left, once they are old enough (:mod:`oharness.notes.tempfiles`). An update builds on
the note's file as it is now (:meth:`NoteStore.latest`: one ``stat``), so a person's edit a
moment before is not overwritten with an older version.

Files that cannot be read as notes are skipped, reported in :meth:`NoteStore.problems` and
never touched.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from oharness.errors import (
    ConflictError,
    LimitError,
    NotFoundError,
    PathSafetyError,
    StorageError,
)
from oharness.fsio import (
    PRIVATE_FILE_MODE,
    atomic_write,
    create_new,
    make_directory,
    remove_checked,
    remove_file,
    replace_checked,
)
from oharness.notes.format import Note, file_revision, parse_note_bytes, serialise_note_bytes
from oharness.notes.ids import check_id
from oharness.notes.note_cache import NOTE_SUFFIX, NoteCache
from oharness.notes.snapshot import NoteSnapshot
from oharness.notes.stored import FileStamp, LoadProblem, StoredNote
from oharness.notes.tempfiles import is_own_temp_name, is_stale_temp, remove_stale_temp_files
from oharness.types import Clock, Scope

if TYPE_CHECKING:
    import filelock

__all__ = ["NOTE_SUFFIX", "FileStamp", "LoadProblem", "NoteStore", "StoredNote"]


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class NoteStore:
    """All notes of one scope directory: the cached view and the writer."""

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
        wall_clock: Clock = _wall_ms,
        snapshot_path: Path | None = None,
    ) -> None:
        self.directory = directory
        self.scope: Scope = scope
        self.max_notes = max_notes
        self.cache = NoteCache(
            directory,
            scope=scope,
            max_notes=max_notes,
            sweep_interval=sweep_interval,
            monotonic=monotonic,
            wall_clock=wall_clock,
            snapshot=None if snapshot_path is None else NoteSnapshot(snapshot_path, scope),
        )
        self._lock: filelock.FileLock | None = None  # made on the first write (an import)
        self._lock_timeout = lock_timeout
        self._lock_path = lock_path
        self._wall_clock = wall_clock
        self._batch_depth = 0
        self._lock_depth = 0
        self._removed_temp: list[Path] = []

    # ---- reading -------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Increases whenever the loaded set of notes changes (for derived caches)."""
        return self.cache.generation

    def changes_since(self, generation: int) -> list[tuple[str, StoredNote | None]] | None:
        """This store's own writes since ``generation`` (``None``: unknown, read :meth:`notes`)."""
        return self.cache.changes_since(generation)

    def refresh(self, *, full: bool = False, lazy: bool = False) -> bool:
        """Bring the cache in step with the disk; True when anything changed (``lazy``: read
        no note file yet, see :meth:`NoteCache.refresh`)."""
        return self.cache.refresh(full=full, lazy=lazy)

    def mark_stale(self) -> None:
        """Another thread saw the folder change: the next refresh reads it all again."""
        self.cache.mark_stale()

    def notes(self) -> list[StoredNote]:
        """Every loaded note (after a cheap refresh)."""
        self.cache.refresh()
        return self.cache.notes()

    def get(self, note_id: str) -> StoredNote | None:
        """The note with exactly this id, if loaded."""
        self.cache.refresh()
        return self.cache.get(note_id)

    def get_folded(self, note_id: str) -> StoredNote | None:
        """The note whose id equals ``note_id`` ignoring letter case, if loaded."""
        self.cache.refresh()
        return self.cache.get_folded(note_id)

    def latest(self, note_id: str) -> StoredNote | None:
        """The note as its file is now (its file checked, reloaded if another program
        rewrote it in place): what an update under the lock builds on."""
        self.cache.refresh()
        return self.cache.latest(note_id)

    def problems(self) -> list[LoadProblem]:
        """Files skipped at load: malformed, misnamed, escaping symlinks, case collisions."""
        self.cache.refresh()
        return self.cache.problems()

    def stamps(self) -> dict[str, FileStamp]:
        """The file stamp of every note by id, reading no note (see :meth:`get_one`)."""
        self.cache.refresh(lazy=True)
        return self.cache.stamps()

    def get_one(self, note_id: str) -> StoredNote | None:
        """The note with exactly this id, reading no other note's file: what a process that
        needs a few notes (a prompt hook attaching two) asks for."""
        self.cache.refresh(lazy=True)
        return self.cache.get_one(note_id)

    def get_one_folded(self, note_id: str) -> StoredNote | None:
        """The note whose id equals ``note_id`` ignoring letter case, reading no other note's
        file (whether an id is free)."""
        self.cache.refresh(lazy=True)
        return self.cache.get_one_folded(note_id)

    def with_digest(self, digest: str) -> StoredNote | None:
        """The note whose content without its id has this digest, if any: the exact-duplicate
        check, which reads only the files the snapshot has no digest for (see
        :meth:`NoteCache.with_digest`)."""
        self.cache.refresh(lazy=True)
        return self.cache.with_digest(digest)

    def unloaded(self) -> list[Path]:
        """Note files not loaded because ``maxNotes`` was reached (least recently modified)."""
        self.cache.refresh(lazy=True)
        return self.cache.unloaded()

    def stray_temp_files(self) -> list[Path]:
        """Temp files left by interrupted writes (never loaded as notes)."""
        self.cache.refresh(lazy=True)
        return self.cache.stray_temp_files()

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
        self.cache.refresh(lazy=True)
        return self.cache.file_count()

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

    def _clean_temp_files(self) -> None:
        """Under the write lock: remove our stale temp files (no writer can be mid-write in
        them: a write older than :data:`STALE_TEMP_AGE_MS` is a dead one). The cache's listing
        names them, so this costs nothing when there are none."""
        candidates = [p for p in self.cache.stray_temp_files() if is_own_temp_name(p.name)]
        self._removed_temp = (
            remove_stale_temp_files(candidates, self._wall_clock()) if candidates else []
        )
        self.cache.drop_stray(self._removed_temp)

    # ---- writing -------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold this directory's write lock (re-entrant; across threads and processes).

        Taking it brings the cache in step with the disk (other processes may have written
        before: the folder is listed and its changed files are read when first asked for),
        and removes stale temp files; under it the store's own writes keep the cache
        exact, so nothing inside needs to read the folder again.
        """
        import filelock  # a process that only reads (a prompt hook) never imports it

        if self._lock is None:
            self._lock = filelock.FileLock(
                self._lock_path, timeout=self._lock_timeout, mode=PRIVATE_FILE_MODE
            )
        lock = self._lock
        try:
            make_directory(self._lock_path.parent)
            lock.acquire()
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
                self.cache.refresh(lazy=True, strict=True)  # files read when asked for
                self._clean_temp_files()
            yield
        finally:
            self._lock_depth -= 1
            lock.release()

    @contextmanager
    def batch(self, *, full: bool = True) -> Iterator[None]:
        """Hold the lock for many writes after one re-read (``full``: every file's ``stat``;
        else the lock's own listing-based refresh, for a caller that swept moments ago).

        Inside a batch no other oharness writer can interleave (they wait for the lock), so the
        cache stays exact; writes that pass ``expect_revision`` still check the file on disk.
        """
        with self.locked():
            if full:
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
            raise _changed_meanwhile(note_id)

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
        expect_absent: bool = False,
        on_durable: Callable[[], None] | None = None,
        on_displaced: Callable[[bytes], None] | None = None,
    ) -> StoredNote:
        """Write a note file's exact bytes (they must parse as a note with this id).

        ``expect_revision``: only replace the file if it still is that version (see
        :func:`~oharness.notes.format.file_revision`), checked on the file replaced itself
        (:func:`oharness.fsio.replace_checked`), so a save by an editor at any instant is kept;
        ``expect_absent``: only create it (a file created meanwhile stays). ``on_durable`` runs
        as soon as the file is durably in place; ``on_displaced`` receives a version that two
        saves racing the write left out of place (to back it up).
        """
        check_id(note_id)
        note = parse_note_bytes(data)
        if note.id != note_id:
            raise ConflictError(f"the file's id {note.id!r} does not match {note_id!r}", id=note_id)
        path = self.path_for(note_id)
        with self.locked():
            self._check_write(note_id, create)
            self._check_revision(path, note_id, expect_revision)
            make_directory(self.directory)
            if expect_revision is not None:
                written = replace_checked(
                    path,
                    data,
                    lambda old: file_revision(old) == expect_revision,
                    on_durable=on_durable,
                    on_displaced=on_displaced,
                )
            elif expect_absent:
                written = create_new(path, data, on_durable=on_durable)
            else:
                atomic_write(path, data, on_durable=on_durable)
                written = True
            if not written:
                raise _changed_meanwhile(note_id)
            st = os.stat(path)
            stored = StoredNote.loaded(note, self.scope, path, st, data)
            self.cache.put(stored, st)
            return stored

    def _check_write(self, note_id: str, create: bool) -> None:
        existing = self.cache.get_one(note_id)  # no other note's file read for a write
        folded = self.cache.get_one_folded(note_id)
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
            count = self.cache.file_count()
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

    def adopt_bytes(
        self, note_id: str, data: bytes, source: Path, *, source_revision: str
    ) -> StoredNote:
        """Write a note's bytes in place of a loose file of this folder (``source``: not a
        note, or a note under another name or in a subfolder), then remove ``source`` when it
        is another file. Refused, changing nothing, when ``source`` is no longer the version
        ``source_revision`` or another note holds the id (the caller backs ``source`` up)."""
        check_id(note_id)
        note = parse_note_bytes(data)
        if note.id != note_id:
            raise ConflictError(f"the file's id does not match {note_id!r}", id=note_id)
        path = self.path_for(note_id)
        with self.locked():
            try:
                current: str | None = file_revision(source.read_bytes())
            except FileNotFoundError:
                current = None
            if current != source_revision:
                raise ConflictError(
                    f"{source} changed or went away meanwhile; nothing was changed: look at "
                    "it and adopt it again",
                    path=str(source),
                )
            same = path.exists() and os.path.samefile(path, source)  # a re-cased name
            if not same:
                self._check_write(note_id, create=True)
            elif self.cache.get_folded(note_id) is not None:
                raise ConflictError(f"a note {note_id!r} already exists", id=note_id)
            make_directory(self.directory)
            atomic_write(path, data)
            if not same:
                remove_file(source)
            st = os.stat(path)
            stored = StoredNote.loaded(note, self.scope, path, st, data)
            self.cache.put(stored, st)
            self.cache.refresh(full=True)  # the loose file is gone from the listing too
            return stored

    def delete(
        self,
        note_id: str,
        *,
        expect_revision: str | None = None,
        on_displaced: Callable[[bytes], None] | None = None,
    ) -> None:
        """Remove a note's file (the caller writes a backup first); optionally only if it is
        still the version ``expect_revision``, checked on the file removed itself."""
        path = self.path_for(note_id)
        with self.locked():
            stored = self.cache.get(note_id)
            if stored is None:
                raise NotFoundError(f"no note {note_id!r} in the {self.scope} scope", id=note_id)
            self._check_revision(path, note_id, expect_revision)
            if expect_revision is None:
                remove_file(path)
            elif not remove_checked(
                path,
                lambda old: file_revision(old) == expect_revision,
                on_displaced=on_displaced,
            ):
                raise _changed_meanwhile(note_id)
            self.cache.drop(stored)


def _changed_meanwhile(note_id: str) -> ConflictError:
    return ConflictError(
        f"note {note_id!r} changed on disk while it was being updated; nothing was "
        "replaced (the next pass sees the new version)",
        id=note_id,
    )
