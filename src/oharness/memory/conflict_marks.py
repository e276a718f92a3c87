"""Notes with a sync conflict waiting, as every reader of memory marks them (issue 29).

A sync pass that finds a note changed differently here and on another machine records the
conflict in ``$OHARNESS_HOME/memory-sync/<scope>/conflicts/<id>.json`` and leaves the local
file alone. So that an agent does not take the local version for the only one, the ``memory``
tool (a ``conflict`` field), the Memory index (a marker on the line and a count with the way to
resolve) and the recall block (``conflict="waiting"`` on the note) say so. Reading the marks is
one folder listing per scope.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from oharness.types import Scope

#: The value of the ``conflict`` field and attribute.
WAITING: Final = "waiting"
#: How to resolve, for a person or a model.
RESOLVE: Final = (
    "the Memory page's Conflicts section, or 'oharness sync conflicts' then "
    "'oharness sync resolve ID --keep local|cloud|both'"
)


def waiting_conflicts(folders: Mapping[Scope, Path]) -> frozenset[tuple[Scope, str]]:
    """``(scope, note id)`` of every conflict waiting in these scopes' conflict folders."""
    found: set[tuple[Scope, str]] = set()
    for scope, folder in folders.items():
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found.update((scope, name[: -len(".json")]) for name in names if name.endswith(".json"))
    return frozenset(found)


def conflict_line(count: int) -> str:
    """The Memory index's closing line when conflicts wait (empty when none)."""
    if not count:
        return ""
    notes = "note has" if count == 1 else "notes have"
    return (
        f"{count} {notes} a sync conflict waiting (marked [conflict waiting]): this machine "
        f"and another changed it differently; ask the person to resolve it in {RESOLVE}."
    )
