"""Deprecated: moved to :mod:`oharness.memory.tools` (this path is removed after 0.2)."""

from oharness.memory import tools as _new
from oharness.memory.tools import (
    anthropic_tools as anthropic_tools,
)
from oharness.memory.tools import (
    call_tool as call_tool,
)
from oharness.memory.tools import (
    openai_tools as openai_tools,
)
from oharness.memory.tools import (
    tool_definitions as tool_definitions,
)
from oharness.tools import moved

__getattr__ = moved(__name__, _new)
