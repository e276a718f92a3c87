"""Lazy re-exports: a package's public names, imported from their defining modules on first use.

A package that re-exports names from heavy modules (numpy, the stemmers, the whole memory layer)
would make every import of it pay for them; a table of ``name -> defining module`` read by the
package's module ``__getattr__`` (PEP 562) pays only for what is used. The re-exported object
*is* the defining module's, so its signature and docstring cannot drift from the package's.

    __getattr__, __dir__ = lazy_exports(__name__, {"open_workspace": "oharness.memory.workspace"})
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: importing typing would dominate ``import oharness``
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the names in ``table``."""
    names = dict(table)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib  # here, not at the top: ``import oharness`` stays at about 1 ms

        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
