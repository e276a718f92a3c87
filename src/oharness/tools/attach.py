"""Deprecated: moved to :mod:`oharness.memory.attach` (this path is removed after 0.2)."""

from oharness.memory import attach as _new
from oharness.memory.attach import (
    recall_for_message as recall_for_message,
)
from oharness.tools import moved

__getattr__ = moved(__name__, _new)
