"""Links between notes (spec 02.4): ``[[note-id]]`` in bodies, derived at load, never stored.

A link resolves in the project scope first, then the user scope. A link to a missing note is
kept (dangling): it usually names a note someone meant to write.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from oharness.types import SCOPES, Scope

_LINK: Final = re.compile(r"\[\[([A-Za-z0-9][A-Za-z0-9_-]{0,127})\]\]")


def extract_links(body: str) -> tuple[str, ...]:
    """The distinct ``[[id]]`` targets of a body, in order of first appearance."""
    if "[[" not in body:
        return ()
    return tuple(dict.fromkeys(match.group(1) for match in _LINK.finditer(body)))


@dataclass(frozen=True)
class ResolvedLink:
    """A link target and where it resolved (``scope`` is ``None`` when dangling)."""

    target: str
    scope: Scope | None


def resolve_link(target: str, exists: Callable[[Scope, str], bool]) -> ResolvedLink:
    """Resolve one target: project scope first, then user; dangling when in neither."""
    for scope in SCOPES:
        if exists(scope, target):
            return ResolvedLink(target, scope)
    return ResolvedLink(target, None)
