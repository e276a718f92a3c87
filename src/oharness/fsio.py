"""Crash-safe file writes: the one helper every writer uses (spec 01.7).

A write goes to a uniquely named temp file in the same directory (a dot-file ending in
``.tmp``, which no loader ever reads as a note), is flushed and fsynced, replaces the target
with :func:`os.replace`, and finally the directory itself is fsynced so the rename survives a
power cut. A crash at any instant leaves the old file or the new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Final

from oharness.errors import StorageError

TEMP_SUFFIX: Final = ".tmp"

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
        if mode is None:
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
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise StorageError(
            f"could not write {target}: {exc.strerror or exc}; check the folder's permissions "
            "and free disk space",
            path=str(target),
        ) from exc
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
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise StorageError(
            f"could not write {target}: {exc.strerror or exc}; check the folder's permissions "
            "and free disk space",
            path=str(target),
        ) from exc
    fsync_directory(target.parent)
    if on_durable is not None:
        on_durable()
    if _fault_hook is not None:
        _fault_hook("after-replace", target)
    return True
