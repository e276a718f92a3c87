"""Links between notes (spec 02.4): ``[[…]]`` in bodies, derived at load, never stored.

A link names a note in one of three forms, tried in this order:

1. its **id**: ``[[payments-go-through-the-adapter-3fa]]``;
2. its **id without the generated hash suffix** (the ``-3fa`` that ``remember`` adds), when
   exactly one note has that stem: ``[[payments-go-through-the-adapter]]``;
3. its **exact summary** (the whole summary, same case), when exactly one note has it:
   ``[[Payments go through the adapter]]``.

Each form looks in the project scope first, then the user scope, as recall does; a stem or a
summary shared by several notes of a scope is ambiguous and resolves to none (use the id). A link
that resolves to no note is kept (dangling): it usually names a note someone meant to write.
The CLI, the tools, the review and the Memory page all resolve links through :class:`LinkIndex`,
so one rule holds everywhere.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from oharness.types import SCOPES, Scope

#: ``[[target]]``: one line, no brackets inside, at most 200 characters (a summary's limit).
_LINK: Final = re.compile(r"\[\[([^\[\]\r\n]{1,200})\]\]")
#: The suffix ``generate_id`` adds to a summary's slug: ``-`` and three hex digits.
_HASH_SUFFIX: Final = re.compile(r"-[0-9a-f]{3}$")


def extract_links(body: str) -> tuple[str, ...]:
    """The distinct ``[[target]]`` texts of a body (trimmed), in order of first appearance."""
    if "[[" not in body:
        return ()
    targets = (match.group(1).strip() for match in _LINK.finditer(body))
    return tuple(dict.fromkeys(target for target in targets if target))


def id_stem(note_id: str) -> str | None:
    """An id without its generated hash suffix (``deploys-tuesday-3fa`` → ``deploys-tuesday``),
    or None when it has none."""
    stem = _HASH_SUFFIX.sub("", note_id)
    return stem if stem != note_id and stem else None


@dataclass(frozen=True)
class ResolvedLink:
    """A link target and the note it names (``scope`` and ``id`` are None when dangling)."""

    target: str
    scope: Scope | None
    id: str | None = None
    #: The target matched several notes of a scope by stem or summary (so it names none).
    ambiguous: bool = False


class LinkIndex:
    """What links can name in a set of notes: ids, unique stems, exact summaries."""

    def __init__(self, notes: Iterable[tuple[Scope, str, str]]) -> None:
        """``notes``: ``(scope, id, summary)`` of every note links may reach."""
        self._ids: set[tuple[Scope, str]] = set()
        self._stems: dict[tuple[Scope, str], list[str]] = defaultdict(list)
        self._summaries: dict[tuple[Scope, str], list[str]] = defaultdict(list)
        for scope, note_id, summary in notes:
            self._ids.add((scope, note_id))
            stem = id_stem(note_id)
            if stem is not None:
                self._stems[(scope, stem)].append(note_id)
            self._summaries[(scope, summary.strip())].append(note_id)

    def resolve(self, target: str) -> ResolvedLink:
        """The note ``target`` names (see the module notes for the order)."""
        for scope in SCOPES:
            if (scope, target) in self._ids:
                return ResolvedLink(target, scope, target)
        for table in (self._stems, self._summaries):
            for scope in SCOPES:
                found = table.get((scope, target))
                if found:
                    if len(found) > 1:
                        return ResolvedLink(target, None, None, ambiguous=True)
                    return ResolvedLink(target, scope, found[0])
        return ResolvedLink(target, None)

    def targets(self, body: str) -> list[ResolvedLink]:
        """Every link of ``body``, resolved."""
        return [self.resolve(target) for target in extract_links(body)]
