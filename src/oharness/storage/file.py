"""The embedded object store: a directory tree, one file per key (``file://PATH``).

- A key ``a/b/c.json`` is the file ``ROOT/a/b/c.json``; keys are validated first
  (:mod:`oharness.storage.validation`), so no key can name a path outside ``ROOT``.
- The ETag is the SHA-256 of the bytes, computed on every read, so it can never disagree with the
  content and needs no side file.
- Writes go through :func:`oharness.fsio.atomic_write` (temp file, fsync, rename, fsync of the
  directory): a reader sees the old bytes or the new ones, never a torn file, and a crash leaves
  at most a hidden ``.tmp`` file, which :meth:`FileObjectStore.list` never reports.
- Every write and delete holds a lock for its key that excludes other threads *and* other
  processes (``fcntl``/``msvcrt`` locks via ``filelock``), so several sync-server processes can
  share one directory. Keys hash onto a fixed set of lock files in ``ROOT/.locks/`` rather than
  one per key: their number stays bounded and none is ever deleted (deleting a lock file others
  may hold is unsafe). Such locks need a local file system; NFS is not supported.
- A delete removes the file and then any directories it left empty.
- The conditional read (:meth:`FileObjectStore.get_if_changed`) answers from one ``stat`` when
  this handle has already hashed that very file: it remembers, per key, the file's identity
  (device, inode, size, modification and change times in nanoseconds) beside its ETag, and the
  same identity means the same bytes. Writes never change a file in place (they rename a new
  one over it), so new bytes come with a new inode or at least a new change time — except when
  a file system reuses an inode within one tick of its coarse clock. So, as git does for its
  "racily clean" index entries, an identity is remembered only when the file was already
  :data:`SETTLED_NS` old (change and modification times) when it was opened; a younger file is
  read and hashed again on every conditional read. ``ctime`` cannot be set back by a program,
  so restoring an older copy (even with its old ``mtime``, as ``cp -p`` and ``rsync -a`` do)
  is always seen.

One limit the other backends do not share: a key cannot also be a "directory" of other keys
(``a`` and ``a/b`` together); such a write is refused with
:class:`~oharness.errors.ValidationError`. The sync layout never does this.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import filelock

from oharness.errors import PreconditionFailed, StorageError, StorageUnavailable, ValidationError
from oharness.fsio import atomic_write, fsync_directory, temp_path_for
from oharness.storage.object_store import NOT_MODIFIED, NotModified, StoredObject
from oharness.storage.validation import validate_condition, validate_key, validate_prefix

__all__ = ["FileObjectStore"]

LOCK_DIRECTORY: Final = ".locks"
LOCK_STRIPES: Final = 256
#: a write whose directory a concurrent delete pruned is retried this many times
_WRITE_ATTEMPTS: Final = 5
#: a file must be this old when read before its identity stands for its bytes (see above); above
#: the timestamp granularity of every common file system (FAT: 2 s)
SETTLED_NS: Final = 3_000_000_000
#: identities remembered per handle (least recently used forgotten first)
IDENTITY_CAPACITY: Final = 65_536

#: (device, inode, size, mtime_ns, ctime_ns) of a file
_Identity = tuple[int, int, int, int, int]


class FileObjectStore:
    """Objects as files under ``root``, with compare-and-swap on content-hash ETags."""

    def __init__(
        self,
        root: Path,
        *,
        lock_timeout: float = 30.0,
        clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.root = Path(root).absolute()
        self._lock_timeout = lock_timeout
        self._clock_ns = clock_ns
        self._identities: OrderedDict[str, tuple[_Identity, str]] = OrderedDict()
        self._identities_lock = threading.Lock()
        self._thread_locks = [threading.Lock() for _ in range(LOCK_STRIPES)]
        self._file_locks: dict[int, filelock.BaseFileLock] = {}

    def __repr__(self) -> str:
        return f"FileObjectStore({str(self.root)!r})"

    def get(self, key: str) -> StoredObject | None:
        """The object at ``key`` with its ETag, or ``None`` when absent."""
        data = self._read(self._path(key), key)
        return None if data is None else StoredObject(data, _content_etag(data))

    def get_if_changed(self, key: str, etag: str) -> StoredObject | NotModified | None:
        """:data:`NOT_MODIFIED` while ``key`` still has ``etag`` (one ``stat`` when this handle
        knows the file), else as :meth:`get`."""
        path = self._path(key)
        try:
            status = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise self._unavailable("read", key, exc) from exc
        if not stat.S_ISREG(status.st_mode):
            return None
        with self._identities_lock:
            known = self._identities.get(key)
            if known == (_identity(status), etag):
                self._identities.move_to_end(key)
                return NOT_MODIFIED
        data = self._read_remembering(path, key)
        if data is None:
            return None
        current = _content_etag(data)
        return NOT_MODIFIED if current == etag else StoredObject(data, current)

    def put(
        self,
        key: str,
        data: bytes,
        *,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> str:
        """Write ``data``; conditional when asked; returns the new ETag."""
        path = self._path(key)
        validate_condition(if_match, if_none_match)
        with self._locked(key):
            if if_none_match and self._read(path, key) is not None:
                raise _precondition_failed(key, "it already exists")
            if if_match is not None:
                current = self._read(path, key)
                if current is None:
                    raise _precondition_failed(key, "it does not exist")
                if _content_etag(current) != if_match:
                    raise _precondition_failed(key, "it changed")
            self._write(path, key, bytes(data))
        return _content_etag(data)

    def delete(self, key: str) -> None:
        """Remove ``key``; absent keys are fine. Directories left empty are removed too."""
        path = self._path(key)
        with self._locked(key):
            try:
                os.unlink(path)
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return
            except OSError as exc:
                raise self._unavailable("delete", key, exc) from exc
            fsync_directory(path.parent)
        self._prune_empty_directories(path.parent)

    def list(self, prefix: str) -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        validate_prefix(prefix)
        directory, _, _ = prefix.rpartition("/")
        start = self.root.joinpath(*directory.split("/")) if directory else self.root
        keys: list[str] = []
        try:
            _collect_keys(start, directory, keys)
        except OSError as exc:
            raise self._unavailable("list", prefix, exc) from exc
        return sorted(key for key in keys if key.startswith(prefix))

    def ping(self) -> None:
        """Check that the root is a directory this process can create files in."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = temp_path_for(self.root / "ping")
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(probe)
        except OSError as exc:
            raise self._unavailable("write to", "", exc) from exc

    # -- paths and I/O -----------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*validate_key(key).split("/"))

    def _read(self, path: Path, key: str) -> bytes | None:
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            raise self._unavailable("read", key, exc) from exc

    def _read_remembering(self, path: Path, key: str) -> bytes | None:
        """The file's bytes; the identity of the very file read is remembered with their ETag
        when the file was settled (see the module notes)."""
        opened_at = self._clock_ns()
        try:
            with open(path, "rb") as handle:
                status = os.fstat(handle.fileno())
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            raise self._unavailable("read", key, exc) from exc
        identity = _identity(status)
        settled = opened_at - max(status.st_mtime_ns, status.st_ctime_ns) >= SETTLED_NS
        with self._identities_lock:
            if settled:
                self._identities[key] = (identity, _content_etag(data))
                self._identities.move_to_end(key)
                while len(self._identities) > IDENTITY_CAPACITY:
                    self._identities.popitem(last=False)
            else:
                self._identities.pop(key, None)
        return data

    def _write(self, path: Path, key: str, data: bytes) -> None:
        for attempt in range(_WRITE_ATTEMPTS):
            error: OSError | StorageError
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(path, data)
                return
            except StorageError as exc:  # atomic_write's, caused by an OSError
                error = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
            except OSError as exc:
                error = exc
            if self._blocked_by_file(path):
                raise _clash(key) from error
            # Otherwise a concurrent delete pruned a directory between our mkdir and our write
            # (or under mkdir itself): make the directories again.
            retryable = isinstance(error, FileNotFoundError | FileExistsError | NotADirectoryError)
            if not retryable or attempt + 1 == _WRITE_ATTEMPTS:
                raise self._unavailable("write", key, error) from error

    def _blocked_by_file(self, path: Path) -> bool:
        """True when ``path`` is a directory or one of its parents is a file."""
        if path.is_dir():
            return True
        for parent in path.parents:
            if parent == self.root or self.root not in parent.parents:
                return False
            try:
                mode = os.stat(parent).st_mode  # one stat: the entry may vanish meanwhile
            except OSError:
                continue
            if not stat.S_ISDIR(mode):
                return True
        return False

    def _prune_empty_directories(self, directory: Path) -> None:
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return  # not empty (or already gone): stop climbing
            fsync_directory(directory.parent)
            directory = directory.parent

    # -- locking -----------------------------------------------------------------------------

    @contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        stripe = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:4]) % LOCK_STRIPES
        with self._thread_locks[stripe]:
            lock = self._file_lock(stripe, key)
            try:
                lock.acquire()
            except filelock.Timeout as exc:
                raise StorageUnavailable(
                    f"timed out after {self._lock_timeout:g} s waiting for the lock of {key} "
                    f"in {self.root}: another process holds it; retry later",
                    key=key,
                ) from exc
            except OSError as exc:
                raise self._unavailable("lock", key, exc) from exc
            try:
                yield
            finally:
                lock.release()

    def _file_lock(self, stripe: int, key: str) -> filelock.BaseFileLock:
        lock = self._file_locks.get(stripe)
        if lock is None:
            lock_directory = self.root / LOCK_DIRECTORY
            try:
                lock_directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._unavailable("lock", key, exc) from exc
            # Only ever used under this stripe's thread lock, so one object per stripe is enough.
            lock = filelock.FileLock(
                lock_directory / f"{stripe:03d}.lock",
                timeout=self._lock_timeout,
                thread_local=False,
            )
            self._file_locks[stripe] = lock
        return lock

    def _unavailable(
        self, action: str, key: str, exc: OSError | StorageError
    ) -> StorageUnavailable:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return StorageUnavailable(
            f"file storage in {self.root} could not {action} {key or 'its directory'}: {reason}; "
            "check that the directory exists, is writable and has free space, then retry",
            key=key,
            root=str(self.root),
        )


def _collect_keys(directory: Path, relative: str, keys: list[str]) -> None:
    """Add the keys of the files below ``directory`` (named ``relative``) to ``keys``."""
    try:
        with os.scandir(directory) as iterator:
            entries = list(iterator)
    except (FileNotFoundError, NotADirectoryError):
        return  # absent, or pruned by a concurrent delete
    for entry in entries:
        if entry.name.startswith("."):
            continue  # temp files, lock files, and keys can never start with "."
        name = f"{relative}/{entry.name}" if relative else entry.name
        if entry.is_dir(follow_symlinks=False):
            _collect_keys(Path(entry.path), name, keys)
        elif entry.is_file(follow_symlinks=False):
            keys.append(name)


def _identity(status: os.stat_result) -> _Identity:
    return (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )


def _content_etag(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _precondition_failed(key: str, reason: str) -> PreconditionFailed:
    return PreconditionFailed(
        f"conditional write to {key} failed: {reason}; re-read it and retry", key=key
    )


def _clash(key: str) -> ValidationError:
    return ValidationError(
        f"cannot store {key}: the file backend cannot hold a key and keys below it at once "
        "(a file and a directory of the same name); choose keys that do not nest",
        key=key,
    )
