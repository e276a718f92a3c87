"""Deprecated: moved to :mod:`oharness.memory.workspace` (this path is removed after 0.2)."""

from oharness.memory import workspace as _new
from oharness.memory.workspace import (
    Workspace as Workspace,
)
from oharness.memory.workspace import (
    open_workspace as open_workspace,
)
from oharness.tools import moved

__getattr__ = moved(__name__, _new)
