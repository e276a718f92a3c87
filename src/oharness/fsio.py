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
import errno
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
        raise _write_failed(target, temp, exc) from exc
    fsync_directory(target.parent)
    if private:
        _tighten_folders(target.parent)
    if on_durable is not None:
        on_durable()
    if _fault_hook is not None:
        _fault_hook("after-replace", target)


def _write_failed(target: Path, temp: Path, exc: OSError) -> StorageError:
    """The error of a write that failed, its temp file removed."""
    with contextlib.suppress(OSError):
        os.unlink(temp)
    return StorageError(
        f"could not write {target}: {exc.strerror or exc}; check the folder's permissions "
        "and free disk space",
        path=str(target),
    )


def _copy_mode(target: Path, temp: Path) -> None:
    """Keep the permissions of the file being replaced (or the umask default for a new one,
    never writable by every user: a umask of 000 would let anyone rewrite a note)."""
    try:
        os.chmod(temp, os.stat(target).st_mode & 0o7777)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~(umask | 0o002))


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


# ---- replacing a file only if it is still the version the caller read ----------------------

_RENAME_EXCHANGE = 2  # renameat2 flag (Linux); renamex_np's RENAME_SWAP (macOS) is 2 as well
_AT_FDCWD = -100


def _exchange_call() -> Callable[[bytes, bytes], int] | None:
    """The C call that swaps two paths atomically, where the platform has one."""
    import ctypes
    import sys

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
        renameat2 = libc.renameat2

        def linux(a: bytes, b: bytes) -> int:
            return int(renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE))

        return linux
    if sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        renamex_np = libc.renamex_np

        def darwin(a: bytes, b: bytes) -> int:
            return int(renamex_np(a, b, _RENAME_EXCHANGE))

        return darwin
    return None


_exchange: Callable[[bytes, bytes], int] | None = _exchange_call()


def set_exchange_supported(supported: bool) -> bool:
    """Use (or, for tests of the fallback, do not use) the atomic swap; returns the old value."""
    global _exchange
    previous = _exchange is not None
    _exchange = _exchange_call() if supported else None
    return previous


def exchange_paths(first: Path, second: Path) -> bool:
    """Swap two existing paths in one atomic step; False where the platform or file system
    cannot (``FileNotFoundError`` when one of them is gone)."""
    if _exchange is None:
        return False
    import ctypes

    if _exchange(os.fsencode(first), os.fsencode(second)) == 0:
        return True
    error = ctypes.get_errno()
    if error == errno.ENOENT:
        raise FileNotFoundError(error, os.strerror(error), str(second))
    if error in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(error, os.strerror(error), str(second))


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _put_back(kept: Path, target: Path, on_displaced: Callable[[bytes], None] | None) -> None:
    """Move ``kept`` to ``target`` unless something is there now (then hand it over)."""
    try:
        os.link(kept, target)
    except FileExistsError:
        data = _read_or_none(kept)
        if data is not None and on_displaced is not None:
            on_displaced(data)
    except OSError:  # no hard links here: put it back unless the name was taken meanwhile
        if not target.exists():
            os.rename(kept, target)
            return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(kept)


def replace_checked(
    target: Path,
    data: bytes,
    unchanged: Callable[[bytes], bool],
    *,
    on_durable: Callable[[], None] | None = None,
    on_displaced: Callable[[bytes], None] | None = None,
) -> bool:
    """Replace ``target`` with ``data`` only if the file replaced passes ``unchanged``; False
    (nothing of the caller's left in place) when it did not or ``target`` is gone.

    The check is made on the very file taken out of place, not on a read before the write: a
    save by another program (an editor) at any instant either lands before the swap, is
    found by the check and put back in place, or lands after it, on top of the new file. The
    swap is one atomic exchange where the platform has one (Linux ``renameat2``, macOS
    ``renamex_np``); elsewhere the file is moved aside, checked, and the new one linked in
    without overwriting a file created meanwhile. A version neither kept in place nor
    expected (two saves racing the swap) goes to ``on_displaced``, never lost silently.
    """
    temp = temp_path_for(target)
    try:
        _write_temp(temp, data, target)
        if _fault_hook is not None:
            _fault_hook("before-replace", target)
        done = _swap_checked(temp, target, data, unchanged, on_displaced)
    except OSError as exc:
        raise _write_failed(target, temp, exc) from exc
    fsync_directory(target.parent)
    if done and on_durable is not None:
        on_durable()
    if done and _fault_hook is not None:
        _fault_hook("after-replace", target)
    return done


def _write_temp(temp: Path, data: bytes, target: Path) -> None:
    """Write and fsync the temp file of a write to ``target`` (with ``target``'s mode)."""
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    if is_private(target):
        os.chmod(temp, PRIVATE_FILE_MODE)
    else:
        _copy_mode(target, temp)


def _swap_checked(
    temp: Path,
    target: Path,
    data: bytes,
    unchanged: Callable[[bytes], bool],
    on_displaced: Callable[[bytes], None] | None,
) -> bool:
    try:
        swapped = exchange_paths(temp, target)
    except FileNotFoundError:  # deleted meanwhile: the deletion stands
        os.unlink(temp)
        return False
    if swapped:  # ``temp`` now names the file that was in place
        if _fault_hook is not None:
            _fault_hook("swapped", target)
        old = _read_or_none(temp)
        if old is not None and unchanged(old):
            os.unlink(temp)
            return True
        try:
            exchange_paths(temp, target)  # put it back; ``temp`` names ours again, or a save
        except FileNotFoundError:
            _put_back(temp, target, on_displaced)
            return False
        mine = _read_or_none(temp)
        if mine is not None and mine != data:  # saved again meanwhile: the newest in place
            exchange_paths(temp, target)
            displaced = _read_or_none(temp)
            if displaced is not None and on_displaced is not None:
                on_displaced(displaced)
        os.unlink(temp)
        return False
    return _move_aside_checked(temp, target, unchanged, on_displaced)


def _move_aside_checked(
    temp: Path,
    target: Path,
    unchanged: Callable[[bytes], bool],
    on_displaced: Callable[[bytes], None] | None,
) -> bool:
    aside = temp_path_for(target)
    try:
        os.rename(target, aside)
    except FileNotFoundError:
        os.unlink(temp)
        return False
    if _fault_hook is not None:
        _fault_hook("swapped", target)
    old = _read_or_none(aside)
    if old is None or not unchanged(old):
        os.unlink(temp)
        _put_back(aside, target, on_displaced)
        return False
    try:
        os.link(temp, target)
    except FileExistsError:  # saved anew while the old file was aside: that save stands
        os.unlink(temp)
        os.unlink(aside)
        return False
    except OSError:  # no hard links on this file system
        os.rename(temp, target)
    else:
        os.unlink(temp)
    os.unlink(aside)
    return True


def remove_checked(
    target: Path,
    unchanged: Callable[[bytes], bool],
    *,
    on_displaced: Callable[[bytes], None] | None = None,
) -> bool:
    """Delete ``target`` only if the file removed passes ``unchanged``: it is moved aside and
    checked there, so a save landing at any instant is put back, never deleted unseen."""
    aside = temp_path_for(target)
    try:
        try:
            os.rename(target, aside)
        except FileNotFoundError:
            return False
        if _fault_hook is not None:
            _fault_hook("swapped", target)
        old = _read_or_none(aside)
        if old is not None and unchanged(old):
            os.unlink(aside)
            done = True
        else:
            _put_back(aside, target, on_displaced)
            done = False
    except OSError as exc:
        raise StorageError(
            f"could not delete {target}: {exc.strerror or exc}; check the folder's permissions",
            path=str(target),
        ) from exc
    fsync_directory(target.parent)
    return done


def create_new(target: Path, data: bytes, *, on_durable: Callable[[], None] | None = None) -> bool:
    """Write ``target`` atomically unless a file of that name exists (then False, nothing
    written): a file another program creates meanwhile is never overwritten."""
    temp = temp_path_for(target)
    try:
        _write_temp(temp, data, target)
        if _fault_hook is not None:
            _fault_hook("before-replace", target)
        try:
            os.link(temp, target)
        except FileExistsError:
            os.unlink(temp)
            return False
        except OSError:  # no hard links on this file system
            if target.exists():
                os.unlink(temp)
                return False
            os.rename(temp, target)
        else:
            os.unlink(temp)
    except OSError as exc:
        raise _write_failed(target, temp, exc) from exc
    fsync_directory(target.parent)
    if on_durable is not None:
        on_durable()
    if _fault_hook is not None:
        _fault_hook("after-replace", target)
    return True


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
