"""A note as a store holds it: the parsed note, where its file is and which version it read."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from oharness.notes.format import Note, file_revision
from oharness.notes.links import extract_links
from oharness.types import Scope


class FileStamp(NamedTuple):
    """What identifies one version of a file cheaply: mtime, size and inode (a tuple: a
    sweep makes one per note file, tens of thousands in a large folder)."""

    mtime_ns: int
    size: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(st.st_mtime_ns, st.st_size, st.st_ino)


@dataclass(frozen=True)
class StoredNote:
    """A note as loaded from its file, with where it lives and its derived links."""

    note: Note
    scope: Scope
    path: Path
    stamp: FileStamp
    revision: str
    links: tuple[str, ...]

    @property
    def id(self) -> str:
        return self.note.id

    @cached_property
    def digest_without_id(self) -> str:
        """The content digest without id (cached: exact-duplicate checks run on every write)."""
        return self.note.content_hash_without_id

    @classmethod
    def loaded(
        cls, note: Note, scope: Scope, path: Path, st: os.stat_result, data: bytes
    ) -> StoredNote:
        """A note read from (or just written to) ``path``, whose ``stat`` is ``st``."""
        revision, links = file_revision(data), extract_links(note.body)
        return cls(note, scope, path, FileStamp.of(st), revision, links)


@dataclass(frozen=True)
class LoadProblem:
    """A file in the scope directory that was skipped, and why (never touched by us)."""

    path: Path
    reason: str
    message: str
    #: The id in the file's frontmatter when the file is a readable note (a note under
    #: another file name, or one whose id collides by case): what it holds is still here.
    note_id: str | None = None


def index_by_id(
    notes: Iterable[StoredNote], problems: dict[str, LoadProblem]
) -> tuple[dict[str, StoredNote], dict[str, StoredNote]]:
    """The notes by id and by id in lower case. Of two ids that differ only by letter case
    (macOS and Windows cannot hold both files) the oldest file keeps its place; the later one
    is reported in ``problems``."""
    by_id: dict[str, StoredNote] = {}
    by_folded: dict[str, StoredNote] = {}
    for stored in sorted(notes, key=lambda s: (s.stamp.mtime_ns, s.id)):
        folded = stored.id.casefold()
        other = by_folded.get(folded)
        if other is not None:
            problems[stored.path.name] = LoadProblem(
                stored.path,
                "case_collision",
                f"its id differs from {other.id!r} only by letter case, which macOS and "
                "Windows cannot hold side by side; rename one of them",
                stored.id,
            )
            continue
        by_folded[folded] = stored
        by_id[stored.id] = stored
    return by_id, by_folded
