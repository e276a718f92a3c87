"""Deprecated import paths of the memory package, kept for one release.

The workspace, the memory service and the model tool definitions moved to
:mod:`oharness.memory`. The paths the documentation showed still import, with a
``DeprecationWarning`` naming the new one; they are removed in the release after 0.2.

- ``attach`` → :mod:`oharness.memory.attach`
- ``definitions`` → :mod:`oharness.memory.tools`
- ``note_filter`` → :mod:`oharness.memory.note_filter`
- ``workspace`` → :mod:`oharness.memory.workspace`
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any


def moved(old: str, new: ModuleType) -> Callable[[str], Any]:
    """Warn that module ``old`` moved to ``new``; the ``__getattr__`` forwarding the rest."""
    warnings.warn(
        f"{old} moved to {new.__name__}: import from there ({old} is removed after 0.2)",
        DeprecationWarning,
        stacklevel=_importer_level(),
    )

    def __getattr__(name: str) -> Any:
        return getattr(new, name)

    return __getattr__


def _importer_level() -> int:
    """The stack level of the code that imported the old path, so the warning names the
    user's line and Python's default filters show it there. ``warnings`` itself skips the
    frames of the import system's bootstrap; the rest of the import machinery is counted."""
    level, frame = 2, sys._getframe(2)  # level 2: the old module's body, which called moved()
    while frame.f_back is not None and _machinery(frame):
        frame = frame.f_back
        if not _bootstrap(frame):
            level += 1
    return level


def _bootstrap(frame: FrameType) -> bool:
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename


def _machinery(frame: FrameType) -> bool:
    module = str(frame.f_globals.get("__name__", ""))
    return _bootstrap(frame) or module == "importlib" or module.startswith(__name__)
