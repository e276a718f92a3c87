"""Crash-safe file writes: the one helper every writer uses (spec 01.7).

A write goes to a uniquely named temp file in the same directory (a dot-file ending in
``.tmp``, which no loader ever reads as a note), is flushed and fsynced, replaces the target
with :func:`os.replace`, and finally the directory itself is fsynced so the rename survives a
power cut. A crash at any instant leaves the old file or the new one, never a torn one.
"""

from __future__ import annotations

import contextlib
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
