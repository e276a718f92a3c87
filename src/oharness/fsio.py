"""Crash-safe file writes: the one helper every writer uses (spec 01.7).

A write goes to a uniquely named temp file in the same directory (a dot-file ending in
``.tmp``, which no loader ever reads as a note), is flushed and fsynced, replaces the target
with :func:`os.replace`, and finally the directory itself is fsynced so the rename survives a
power cut. A crash at any instant leaves the old file or the new one, never a torn one.

Private folders (``$OHARNESS_HOME``): :func:`keep_private` creates the folder 0700, tightens
whatever in it is readable by others, and marks it for this process, so that every later write
under it — :func:`atomic_write`, :func:`make_directory`, :func:`private_mode` for the few
writers that open files themselves — makes files 0600 and folders 0700 whatever the umask.
Anywhere else (a project's ``MEMORY/``) a new file gets the umask's mode and a replaced file
keeps its own, as a repository expects.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from oharness.errors import StorageError

TEMP_SUFFIX: Final = ".tmp"
PRIVATE_FILE_MODE: Final = 0o600
PRIVATE_DIRECTORY_MODE: Final = 0o700
_OTHERS: Final = 0o077

#: The real paths of the private folders of this process (normally one home).
_private_roots: frozenset[str] = frozenset()
_private_lock = threading.Lock()

#: Fault injection for crash simulations: called as ``hook(stage, target)`` with stage
#: ``"before-replace"`` (the temp file is written and fsynced, the target untouched) or
#: ``"after-replace"`` (the new file is in place). A hook that raises simulates a crash at that
#: instant. ``None`` in normal use.
FaultHook = Callable[[str, Path], None]
_fault_hook: FaultHook | None = None


def set_fault_hook(hook: FaultHook | None) -> FaultHook | None:
    """Install a crash-simulation hook (``None`` removes it); returns the previous one."""
    global _fault_hook
    previous, _fault_hook = _fault_hook, hook
    return previous


def temp_path_for(target: Path) -> Path:
    """A unique temp path beside ``target`` (hidden, ``.tmp`` suffix)."""
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}")


def is_temp_name(name: str) -> bool:
    """True for names :func:`temp_path_for` produces (stray ones are left by crashes)."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def fsync_directory(directory: Path) -> None:
    """Flush a directory entry change to disk (a no-op where the OS does not support it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(
    target: Path,
    data: bytes,
    *,
    mode: int | None = None,
    on_durable: Callable[[], None] | None = None,
) -> None:
    """Write ``data`` to ``target`` atomically and durably (never a torn file).

    ``on_durable`` runs once the new file and its directory entry are on disk, for callers that
    must record that fact durably right away (the sync journal of pulled files).
    """
    temp = temp_path_for(target)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        fd = os.open(temp, flags, 0o600 if mode is None else mode)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        private = mode is None and is_private(target)
        if private:
            os.chmod(temp, PRIVATE_FILE_MODE)
        elif mode is None:
            _copy_mode(target, temp)
        if _fault_hook is not None:
            _fault_hook("before-replace", target)
        os.replace(temp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise StorageError(
            f"could not write {target}: {exc.strerror or exc}; check the folder's permissions "
            "and free disk space",
            path=str(target),
        ) from exc
    fsync_directory(target.parent)
    if private:
        _tighten_folders(target.parent)
    if on_durable is not None:
        on_durable()
    if _fault_hook is not None:
        _fault_hook("after-replace", target)


def _copy_mode(target: Path, temp: Path) -> None:
    """Keep the permissions of the file being replaced (or the umask default for a new one)."""
    try:
        os.chmod(temp, os.stat(target).st_mode & 0o7777)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)


def remove_file(target: Path) -> None:
    """Delete ``target`` durably; a file already gone is fine."""
    try:
        os.unlink(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(
            f"could not delete {target}: {exc.strerror or exc}; check the folder's permissions",
            path=str(target),
        ) from exc
    fsync_directory(target.parent)


def is_private(path: Path | str) -> bool:
    """True when ``path`` lies in a folder :func:`keep_private` was given in this process."""
    return bool(_private_roots) and _private_root_of(os.path.realpath(path)) is not None


def _private_root_of(real: str) -> str | None:
    """The private root holding the real path ``real`` (itself or a parent), if any."""
    current = real
    while current not in _private_roots:
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return current


def private_mode(path: Path | str, default: int = 0o666) -> int:
    """The mode to create a file at ``path`` with: 0600 in a private folder, else ``default``."""
    return PRIVATE_FILE_MODE if is_private(path) else default


def make_directory(directory: Path) -> None:
    """``mkdir -p``; in a private folder every folder it creates is 0700 whatever the umask."""
    if directory.is_dir():
        return
    directory.mkdir(parents=True, exist_ok=True)
    if is_private(directory):
        _tighten_folders(directory)


def _tighten_folders(directory: Path) -> None:
    """Make ``directory`` and its parents up to the private root 0700 where they are looser."""
    real = os.path.realpath(directory)
    root = _private_root_of(real)
    current = Path(real)
    while root is not None:
        _tighten(current)
        if str(current) == root or current.parent == current:
            break
        current = current.parent


def _tighten(path: Path | str) -> bool:
    """Drop the group and other bits of one entry we own; True when it was looser."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
        return False  # a link's target is not ours to change; nor is another user's file
    mode = stat.S_IMODE(info.st_mode)
    if not mode & _OTHERS:
        return False
    try:
        os.chmod(path, mode & ~_OTHERS)
    except OSError:
        return False
    return True


def _tighten_tree(root: str) -> int:
    """Tighten every entry under ``root`` (links are not followed); how many were looser."""
    count = int(_tighten(root))
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            count += _tighten(entry.path)
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return count


def keep_private(root: Path, *, thorough: bool = False) -> int:
    """Make ``root`` a private folder for this process (see the module notes).

    Creates it 0700 when missing, tightens anything in it that others can read or write (links
    are not followed, entries of another user are left alone) and returns how many entries were
    tightened; 0 when nothing was looser or ``root`` was already kept private. Unless
    ``thorough`` (a long-lived process), a root that is already 0700 is not walked: everything
    written there since it was made private is private, and a walk of a large home costs a
    short command most of its time.
    """
    global _private_roots
    root.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    real = os.path.realpath(root)
    with _private_lock:
        if real in _private_roots and not thorough:
            return 0
        if real not in _private_roots:
            _private_roots = _private_roots | {real}
    if not thorough and not stat.S_IMODE(os.stat(real).st_mode) & _OTHERS:
        return 0
    return _tighten_tree(real)
