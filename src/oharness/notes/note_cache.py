"""The in-process cache of one notes folder, kept in step with the disk (01.7).

:meth:`NoteCache.refresh` runs before every read and costs one ``stat`` of the folder when
nothing changed. When the folder's mtime moved, or while that mtime is too recent to be
trusted (a change within the file system's time granularity leaves it equal), the cache lists
the folder — names and inode numbers, no ``stat`` per file — and stats only the files written
in that recent window; it sweeps (``stat`` of every file, parsing only the changed ones) only
when that listing or one of those files differs. While the mtime is untrusted the folder is
listed again after 50 ms, in a folder of more than 2,500 notes after 20 µs per note (listing
takes at most a twentieth of the time), under the write lock after 50 ms whatever its size
(what another writer did just before must show). Creations, deletions and renames (which is
how most editors save) therefore show at once; an in-place rewrite of an older file by another
program shows within ``sweep_interval`` in folders of up to 256 notes (a rotating slice of the
files is checked every interval, a sixteenth and at least 256), within sixteen intervals in
larger ones. ``refresh(full=True)`` sweeps at once (sync, doctor, review).

The store's own writes update the cache in place (:meth:`put`, :meth:`drop`): the folder is
not read again because of them, only listed once the racy window allows.

Files that cannot be read as notes are skipped, reported in :meth:`NoteCache.problems` and
never touched.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from oharness.errors import NoteFormatError
from oharness.notes.folder_scan import (
    NOTE_SUFFIX,
    FolderListing,
    FolderScan,
    Listing,
    list_folder,
    scan_folder,
)
from oharness.notes.format import parse_note_bytes
from oharness.notes.snapshot import REWRITE_AFTER, NoteSnapshot
from oharness.notes.stored import FileStamp, LoadProblem, StoredNote, index_by_id
from oharness.types import Clock, Scope

__all__ = ["NOTE_SUFFIX", "NoteCache"]
RACY_WINDOW_NS: Final = 2_000_000_000
#: Files checked per interval between full sweeps: a share of them, at least this many.
_SPOT_CHECK_ROUNDS: Final = 16
_SPOT_CHECK_MIN: Final = 256
#: While the folder's mtime is too recent to be trusted, list it again at most this often (s),
#: and in a large folder at most once per this many seconds per file: a listing costs about a
#: microsecond per file, so listing again takes at most a twentieth of the time.
_RACY_RECHECK: Final = 0.05
_RACY_RECHECK_PER_FILE: Final = 0.000_02
#: Own changes remembered for :meth:`NoteCache.changes_since` (halved when exceeded).
_JOURNAL_MAX: Final = 512


class NoteCache:
    """The loaded notes of one scope directory (reading only; :class:`NoteStore` writes)."""

    def __init__(
        self,
        directory: Path,
        *,
        scope: Scope,
        max_notes: int,
        sweep_interval: float,
        monotonic: Callable[[], float],
        wall_clock: Clock,
        snapshot: NoteSnapshot | None = None,
    ) -> None:
        self.directory = directory
        #: The parsed notes a former process left (notes/snapshot.py), if the home has a cache.
        self._snapshot = snapshot
        self.scope: Scope = scope
        self.max_notes = max_notes
        self._sweep_interval = sweep_interval
        self._monotonic = monotonic
        self._wall_clock = wall_clock  # compared with file system times
        self._by_name: dict[str, StoredNote] = {}
        self._by_id: dict[str, StoredNote] = {}
        self._by_folded: dict[str, StoredNote] = {}
        #: Files written within the racy window (checked on each listing), by name.
        self._recent: dict[str, tuple[str | Path, FileStamp]] = {}
        #: The stamp of every file the last sweep meant to load, and of the store's own writes.
        self._swept: dict[str, FileStamp] = {}
        #: The files of the last sweep, by name, while they are not read yet (see _settle).
        self._pending: dict[str, tuple[str, os.stat_result]] | None = None
        self._pending_problems: dict[str, LoadProblem] = {}
        self._pending_folds_collide = False
        #: The pending files by their id in lower case (made when first asked for).
        self._pending_folded: dict[str, str] | None = None
        #: Files parsed since the snapshot was written (it is written again past a count).
        self._parsed_unsaved = 0
        #: Notes read on their own (get_one) before the sweep was settled.
        self._peeked: dict[str, StoredNote] = {}
        self._sweeps = 0
        self._problems: dict[str, LoadProblem] = {}
        self._unloaded: list[Path] = []
        self._skipped: dict[str, tuple[FileStamp, LoadProblem]] = {}
        self._listing: Listing = {}
        self._file_total = 0
        self._stray_temp: list[Path] = []
        self._dir_stamp: int | None = None
        self._racy = False
        #: The loaded files' names, in the order the spot checks go through them.
        self._rotation: list[str] = []
        self._rotation_at = 0
        self._checked_at = 0.0
        self._last_sweep: float | None = None
        self._stale = False  # a file rewritten in place was seen (:meth:`mark_stale`)
        self._generation = 0
        #: The store's own changes since generation ``_journal_floor`` (a sweep restarts it).
        self._journal: list[tuple[int, str, StoredNote | None]] = []
        self._journal_floor = 0

    # ---- the cached view -------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Increases whenever the loaded set of notes changes (for derived caches)."""
        return self._generation

    def notes(self) -> list[StoredNote]:
        self._settle()
        return list(self._by_id.values())

    def changes_since(self, generation: int) -> list[tuple[str, StoredNote | None]] | None:
        """The notes written (or removed: ``None``) since ``generation``, in order; ``None``
        when that is not known (a sweep happened since), so the caller reads :meth:`notes`."""
        if generation < self._journal_floor:
            return None
        return [(note_id, stored) for at, note_id, stored in self._journal if at > generation]

    def _log(self, note_id: str, stored: StoredNote | None) -> None:
        self._generation += 1
        self._journal.append((self._generation, note_id, stored))
        if len(self._journal) > _JOURNAL_MAX:
            drop = len(self._journal) // 2
            self._journal_floor = self._journal[drop - 1][0]
            del self._journal[:drop]

    def get(self, note_id: str) -> StoredNote | None:
        self._settle()
        return self._by_id.get(note_id)

    def get_folded(self, note_id: str) -> StoredNote | None:
        self._settle()
        return self._by_folded.get(note_id.casefold())

    def problems(self) -> list[LoadProblem]:
        self._settle()
        return sorted(self._problems.values(), key=lambda problem: problem.path.name)

    def unloaded(self) -> list[Path]:
        return list(self._unloaded)

    def stray_temp_files(self) -> list[Path]:
        return list(self._stray_temp)

    def file_count(self) -> int:
        return self._file_total

    # ---- keeping in step -------------------------------------------------------------------

    def refresh(self, *, full: bool = False, lazy: bool = False, strict: bool = False) -> bool:
        """Bring the cache in step with the disk; True when anything changed.

        ``lazy``: list and ``stat`` only, reading the changed files when a note is first
        asked for (:meth:`stamps`, :meth:`get_one`, :meth:`unloaded` and the counts need no
        note); they are ``stat``-ed again then, so what is read matches its stamp.
        ``strict``: while the folder's mtime is too recent to be trusted, list it again after
        the short interval whatever its size (the write lock: what another writer did just
        before must show)."""
        sweeps = self._sweeps
        changed = self._refresh(full, strict)
        if self._pending is not None and not lazy:
            changed = self._settle(restat=self._sweeps == sweeps) or changed
        return changed

    def mark_stale(self) -> None:
        """Another thread saw the folder change: the next :meth:`refresh` sweeps."""
        self._stale = True

    def _refresh(self, full: bool, strict: bool) -> bool:
        dir_mtime = self._stat_dir()
        now = self._monotonic()
        full, self._stale = full or self._stale, False
        if full or self._last_sweep is None:
            return self._sweep(dir_mtime, now)
        recheck = _RACY_RECHECK
        if not strict:
            recheck = max(recheck, len(self._listing) * _RACY_RECHECK_PER_FILE)
        if dir_mtime != self._dir_stamp or (self._racy and now - self._checked_at >= recheck):
            if self._listing_differs(dir_mtime):
                return self._sweep(dir_mtime, now)
            # From the end of the listing: a slow listing is not followed by another at once.
            self._trust(dir_mtime, self._monotonic())
            return False
        if now - self._last_sweep < self._sweep_interval:
            return False
        # In-place rewrites leave the folder's mtime alone: check a rotating slice of the
        # files (all of them within a few intervals) and sweep fully only on a difference.
        self._last_sweep = now
        return self._sweep(dir_mtime, now) if self._spot_check() else False

    def _stat_dir(self) -> int | None:
        try:
            return os.stat(self.directory).st_mtime_ns
        except FileNotFoundError:
            return None

    def _trust(self, dir_mtime: int | None, now: float) -> None:
        """Take ``dir_mtime`` as the folder's stamp; it is racy while within the window."""
        self._dir_stamp = dir_mtime
        self._checked_at = now
        self._racy = dir_mtime is not None and self._wall_ns() - dir_mtime < RACY_WINDOW_NS

    def _wall_ns(self) -> int:
        return self._wall_clock() * 1_000_000

    def _listing_differs(self, dir_mtime: int | None) -> bool:
        """True when the folder's names or inodes, or a file written within the racy window,
        differ from what is loaded (temp files in the listing are taken as they are)."""
        found = list_folder(self.directory) if dir_mtime is not None else FolderListing({}, [])
        if found is None or found.names != self._listing:
            return True
        self._stray_temp = found.stray
        return self._recent_file_changed()

    def _recent_file_changed(self) -> bool:
        """True when a file written within the racy window changed since it was loaded."""
        since = self._wall_ns() - RACY_WINDOW_NS
        for name, (path, stamp) in list(self._recent.items()):
            if stamp.mtime_ns < since:
                del self._recent[name]  # old enough: the spot checks cover it from now on
                continue
            try:
                if FileStamp.of(os.stat(path)) != stamp:
                    return True
            except OSError:
                return True
        return False

    def _spot_check(self) -> bool:
        """True when one of the next files in rotation changed since it was loaded."""
        rotation = self._rotation
        if not rotation:
            return False
        size = min(len(rotation), max(_SPOT_CHECK_MIN, len(rotation) // _SPOT_CHECK_ROUNDS))
        start = self._rotation_at % len(rotation)
        self._rotation_at = start + size
        for index in range(start, start + size):
            name = rotation[index % len(rotation)]
            stamp = self._swept.get(name)
            if stamp is None:
                continue  # removed by the store itself since the sweep
            try:
                current = FileStamp.of(os.stat(os.path.join(self.directory, name)))
            except OSError:
                return True
            if current != stamp:
                return True
        return False

    # ---- sweeping --------------------------------------------------------------------------

    def _sweep(self, dir_mtime: int | None, now: float) -> bool:
        """List and ``stat`` every file; reading the changed ones waits for :meth:`_settle`
        (a process that only needs a few notes, or only their stamps, reads no other file)."""
        scan = scan_folder(self.directory) if dir_mtime is not None else FolderScan.empty()
        swept, files = scan.stamps, scan.files
        self._file_total = len(files)
        self._unloaded = []
        if len(files) > self.max_notes:  # the newest load; the others are reported
            order = sorted(swept, key=lambda name: (-swept[name].mtime_ns, name))
            self._unloaded = [Path(files[name][0]) for name in order[self.max_notes :]]
            swept = {name: swept[name] for name in order[: self.max_notes]}
            files = {name: files[name] for name in swept}
        # Every change of the loaded notes shows in a stamp (a new file that turns out
        # unreadable counts too: derived caches then look again, which is harmless).
        changed = swept != self._swept
        self._swept = swept
        self._pending = files
        self._pending_problems = scan.problems
        self._pending_folds_collide = len({name.casefold() for name in swept}) != len(swept)
        self._pending_folded = None
        self._listing = scan.listing
        self._rotation = list(swept)
        self._stray_temp = scan.stray
        since = self._wall_ns() - RACY_WINDOW_NS if swept else 0
        self._recent = {
            name: (files[name][0], stamp)
            for name, stamp in swept.items()
            if stamp.mtime_ns >= since
        }
        if changed:
            self._new_generation()
        else:
            self._settle(restat=False)  # nothing to read: every note is already loaded
        self._sweeps += 1
        self._last_sweep = now
        self._trust(dir_mtime, self._monotonic())
        return changed

    def _new_generation(self) -> None:
        self._generation += 1
        self._journal.clear()
        self._journal_floor = self._generation

    def _settle(self, *, restat: bool = True) -> bool:
        """Read the files the last sweep found changed (the notes of the others are kept);
        True when one of them changed again since that sweep listed it (``restat``: the
        sweep was not just now, so ``stat`` each file again before reading it)."""
        pending = self._pending
        if pending is None:
            return False
        self._pending = None
        moved = False
        problems = self._pending_problems
        by_name: dict[str, StoredNote] = {}
        skipped: dict[str, tuple[FileStamp, LoadProblem]] = {}
        stats: dict[str, os.stat_result] = {}
        parsed = 0
        for name, (path, st) in pending.items():
            stamp = self._swept[name]
            cached = self._known(name, stamp)
            if cached is not None:
                by_name[name], stats[name] = cached, st
                continue
            known = self._skipped.get(name)
            if known is not None and known[0] == stamp:
                skipped[name] = known  # still the same unreadable file: no need to parse again
                continue
            if restat:
                st, stamp = self._restat(name, path, st, problems)
                if stamp != self._swept[name]:
                    moved = True
                    self._swept[name] = stamp
            stored = None
            if name not in problems:
                stored = self._from_snapshot(name, path, st)
                if stored is None:
                    parsed += 1
                    stored = self._load_file(name, path, st, problems)
            if stored is not None:
                by_name[name], stats[name] = stored, st
            else:
                skipped[name] = (stamp, problems[name])
        problems.update({name: problem for name, (_, problem) in skipped.items()})
        self._skipped = skipped
        self._peeked = {}
        self._install(by_name, problems)
        self._parsed_unsaved += parsed
        if self._snapshot is not None and self._parsed_unsaved >= REWRITE_AFTER:
            self._snapshot.save([(stored, stats[name]) for name, stored in by_name.items()])
            self._parsed_unsaved = 0
        if moved:
            self._new_generation()
        return moved

    def _from_snapshot(self, name: str, path: str, st: os.stat_result) -> StoredNote | None:
        if self._snapshot is None:
            return None
        cached = self._by_name.get(name)  # the same path: one Path object per note
        return self._snapshot.take(name, cached.path if cached is not None else Path(path), st)

    def _restat(
        self, name: str, path: str, st: os.stat_result, problems: dict[str, LoadProblem]
    ) -> tuple[os.stat_result, FileStamp]:
        """The file's ``stat`` now (``st`` and a problem when it cannot be read any more)."""
        try:
            st = os.stat(path)
        except OSError as exc:
            problems[name] = LoadProblem(
                Path(path), "unreadable", f"cannot be read: {exc.strerror}"
            )
        return st, FileStamp.of(st)

    def _known(self, name: str, stamp: FileStamp) -> StoredNote | None:
        """The note already read from this version of the file, if any."""
        for known in (self._by_name.get(name), self._peeked.get(name)):
            if known is not None and known.stamp == stamp:
                return known
        return None

    def stamps(self) -> dict[str, FileStamp]:
        """The stamp of each note to be loaded, by id, without reading any file.

        Before the sweep is settled this names every file the listing would load (one that
        then proves unreadable included): a derived cache compares its own keys with them
        and reads only what it lacks with :meth:`get_one`."""
        pending = self._pending
        if pending is not None and self._pending_folds_collide:
            self._settle()  # which of two ids differing by case loads needs every file
            pending = None
        if pending is None:
            return {note_id: stored.stamp for note_id, stored in self._by_id.items()}
        suffix = len(NOTE_SUFFIX)
        return {
            name[:-suffix]: self._swept[name]
            for name in pending
            if (known := self._skipped.get(name)) is None or known[0] != self._swept[name]
        }

    def get_one(self, note_id: str) -> StoredNote | None:
        """The note with exactly this id, reading no other file than its own."""
        pending = self._pending
        if pending is None or self._pending_folds_collide:
            return self.get(note_id)
        name = note_id + NOTE_SUFFIX
        entry = pending.get(name)
        if entry is None:
            return None
        path = entry[0]
        try:
            st = os.stat(path)  # as it is now: what is read matches its stamp
        except OSError:
            return None
        known = self._known(name, FileStamp.of(st))
        if known is not None:
            return known
        stored = self._load_file(name, path, st, {})
        if stored is not None and stored.id == note_id:
            self._peeked[name] = stored
            return stored
        return None

    def get_one_folded(self, note_id: str) -> StoredNote | None:
        """The note whose id equals ``note_id`` ignoring letter case, reading no other file
        than its own (what a write checks before it takes an id)."""
        pending = self._pending
        if pending is None or self._pending_folds_collide:
            return self.get_folded(note_id)
        name = self._folded_names().get(note_id.casefold())
        return None if name is None else self.get_one(name[: -len(NOTE_SUFFIX)])

    def _folded_names(self) -> dict[str, str]:
        """The pending files' names by their id in lower case (no two: that would settle)."""
        if self._pending_folded is None:
            suffix = len(NOTE_SUFFIX)
            self._pending_folded = {name[:-suffix].casefold(): name for name in self._pending or {}}
        return self._pending_folded

    def with_digest(self, digest: str) -> StoredNote | None:
        """The note whose content without its id has this digest (``remember``'s exact-
        duplicate check; the oldest file when several have), or None.

        Before the sweep is settled the digests come from the snapshot's head for the files
        unchanged since it was written, and from the notes already read; only the other files
        are read (and those whose digest matches, to be sure of them), so a new process
        checking 10,000 notes reads no note's file when none changed. Reading many settles the
        sweep, which writes the snapshot again for the next process."""
        pending = self._pending
        if pending is not None and self._pending_folds_collide:
            self._settle()
            pending = None
        if pending is None:
            return next((s for s in self._by_id.values() if s.digest_without_id == digest), None)
        suffix = len(NOTE_SUFFIX)
        vouched: set[str] = set()
        candidates: list[str] = []
        if self._snapshot is not None:
            vouched, candidates = self._snapshot.unchanged(pending, digest)
        read = 0
        for name in pending.keys() - vouched:
            stamp = self._swept[name]
            stored = self._known(name, stamp)
            if stored is None:
                known = self._skipped.get(name)
                if known is not None and known[0] == stamp:
                    continue  # the same unreadable file as before
                read += 1
                stored = self.get_one(name[:-suffix])
            if stored is not None and stored.digest_without_id == digest:
                candidates.append(name)
        matches = [
            stored
            for name in candidates
            if (stored := self.get_one(name[:-suffix])) is not None
            and stored.digest_without_id == digest
        ]
        if read >= REWRITE_AFTER:
            self._parsed_unsaved += read
            self._settle()  # takes the notes just read and writes the snapshot
        return min(matches, key=lambda s: (s.stamp.mtime_ns, s.id)) if matches else None

    def _load_file(
        self, name: str, where: str | Path, st: os.stat_result, problems: dict[str, LoadProblem]
    ) -> StoredNote | None:
        cached = self._by_name.get(name)  # the same path: one Path object per note
        path = cached.path if cached is not None else Path(where)
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
                note.id,
            )
            return None
        return StoredNote.loaded(note, self.scope, path, st, data)

    def _install(self, by_name: dict[str, StoredNote], problems: dict[str, LoadProblem]) -> None:
        self._by_id, self._by_folded = index_by_id(by_name.values(), problems)
        self._by_name = by_name
        self._problems = problems

    # ---- the store's own changes (under its write lock) -------------------------------------

    def put(self, stored: StoredNote, st: os.stat_result | None = None) -> None:
        """The store wrote ``stored`` (whose file's ``stat`` is ``st``): update in place
        (collisions were refused before). Before the sweep is settled the note joins it,
        already read, so a write settles nothing the caller did not ask for."""
        name = stored.path.name
        pending = self._pending
        if pending is not None and st is not None:
            if name not in pending:
                folded = self._folded_names().setdefault(stored.id.casefold(), name)
                self._pending_folds_collide = self._pending_folds_collide or folded != name
            pending[name] = (str(stored.path), st)
            self._peeked[name] = stored
            self._pending_problems.pop(name, None)
        else:
            self._settle()
            self._by_name[name] = stored
            self._by_id[stored.id] = stored
            self._by_folded[stored.id.casefold()] = stored
            self._problems.pop(name, None)
        if name not in self._listing:
            self._file_total += 1
        self._listing[name] = stored.stamp.inode
        self._recent[name] = (stored.path, stored.stamp)
        self._swept[name] = stored.stamp
        self._skipped.pop(name, None)
        self._log(stored.id, stored)
        self._own_change()

    def drop(self, stored: StoredNote) -> None:
        """The store removed ``stored``'s file."""
        self._settle()
        name = stored.path.name
        if self._listing.pop(name, None) is not None:
            self._file_total -= 1
        self._by_name.pop(name, None)
        self._recent.pop(name, None)
        self._swept.pop(name, None)
        self._by_id.pop(stored.id, None)
        self._by_folded.pop(stored.id.casefold(), None)
        self._log(stored.id, None)
        self._own_change()
        if self._unloaded:
            self._last_sweep = None  # the freed place goes to the newest file left out

    def drop_stray(self, removed: Iterable[Path]) -> None:
        """The store removed these temp files of killed writes."""
        if gone := set(removed):
            self._stray_temp = [path for path in self._stray_temp if path not in gone]
            self._own_change()

    def _own_change(self) -> None:
        # The folder's new mtime is ours, unless another program changed it within the same
        # tick: trust it only as racy, so the next refresh past the window lists the folder.
        if self._last_sweep is not None:
            self._dir_stamp = self._stat_dir()
            self._checked_at = self._monotonic()
            self._racy = True

    def latest(self, note_id: str) -> StoredNote | None:
        """The note as its file is now: one ``stat``, reloaded when it changed (under the
        write lock, before an update builds on it)."""
        self._settle()
        stored = self._by_id.get(note_id)
        if stored is None:
            return None
        try:
            st = os.stat(stored.path)
        except OSError:
            return stored  # gone: the next listing notices; the write reports it
        if FileStamp.of(st) == stored.stamp:
            return stored
        fresh = self._load_file(stored.path.name, stored.path, st, {})
        if fresh is None or fresh.id != note_id:
            return stored
        self._by_name[stored.path.name] = fresh
        self._recent[stored.path.name] = (fresh.path, fresh.stamp)
        self._swept[stored.path.name] = fresh.stamp
        self._by_id[note_id] = fresh
        self._by_folded[note_id.casefold()] = fresh
        self._log(note_id, fresh)
        return fresh
