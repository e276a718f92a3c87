"""Deprecated: moved to :mod:`oharness.memory.note_filter` (this path is removed after 0.2)."""

from oharness.memory import note_filter as _new
from oharness.memory.note_filter import (
    NoteFilter as NoteFilter,
)
from oharness.tools import moved

__getattr__ = moved(__name__, _new)
