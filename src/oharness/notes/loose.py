"""Markdown files in a notes folder that are not loaded as notes, with the reason and the fix.

A notes folder holds one note per file, ``<id>.md``, directly inside it. People and other
programs leave other Markdown there too, and none of it is loaded:

- a file without frontmatter, as Obsidian or a person writes it, or with broken frontmatter:
  *not a note yet* (``oharness memory adopt`` adds the frontmatter);
- a note renamed or re-cased by hand (``x.md`` → ``old-x.md``, ``X.md``), or given a ``.MD`` or
  ``.markdown`` suffix: its frontmatter still names its id;
- a note moved into a subfolder (``mv MEMORY/x.md MEMORY/archive/``).

Each is listed as a :class:`LooseFile`. Sync reads none of them as a deletion: a synced note
whose text is still in one of these files stays on every other machine
(:mod:`oharness.sync.local`). Hidden files and folders (``.obsidian/``, ``.trash/``) and the
temp files of writes are not looked at; symlinks are not followed.
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Final

from oharness.errors import NoteFormatError
from oharness.fsio import is_temp_name
from oharness.notes.format import parse_note_bytes
from oharness.notes.store import NOTE_SUFFIX, LoadProblem, NoteStore
from oharness.types import Scope

#: Suffixes of Markdown files, compared in lower case.
MARKDOWN_SUFFIXES: Final = (".md", ".markdown")
#: The most files one listing names (the rest are counted).
MAX_LISTED: Final = 1000
#: Files larger than this are not read (a note body is at most 128 KiB by default).
MAX_READ_BYTES: Final = 1_048_576
#: The reasons of :class:`LoadProblem` for a file whose frontmatter cannot be read as a note's.
NOT_A_NOTE_REASONS: Final = frozenset(
    {
        "no_frontmatter",
        "empty_frontmatter",
        "unclosed_frontmatter",
        "invalid_json",
        "not_an_object",
        "invalid_id",
        "invalid_summary",
        "invalid_tags",
        "invalid_type",
        "invalid_characters",
        "not_utf8",
    }
)


@dataclass(frozen=True)
class LooseFile:
    """A Markdown file of a notes folder that is not loaded, and what to do about it."""

    path: Path
    #: Relative to the notes folder, with ``/`` (what ``oharness memory adopt`` takes).
    relative: str
    scope: Scope
    #: A parse reason (``no_frontmatter``…), ``name_mismatch``, ``in_subfolder`` or
    #: ``misnamed`` (a suffix other than ``.md``).
    code: str
    #: One line: what the file is and why it is not loaded.
    why: str
    #: The id its frontmatter names when it is a readable note (renamed, moved, misnamed).
    note_id: str | None = None
    #: The note it holds is loaded from its own file too: this file is a second copy.
    duplicate: bool = False
    #: False when its frontmatter is broken beyond a guess (a person fixes it first).
    adoptable: bool = True

    @property
    def is_note(self) -> bool:
        """True for a readable note under another name or in a subfolder."""
        return self.note_id is not None

    def adopt_command(self) -> str:
        """The command that takes the file in."""
        scope = " --scope user" if self.scope == "user" else ""
        return f"oharness memory adopt{scope} {shlex.quote(self.relative)}"

    @cached_property
    def credential(self) -> str | None:
        """The credential the file holds, described without its value (read once)."""
        return None if self.duplicate else _credential_in(self.path)

    @property
    def fix_kind(self) -> str:
        """Which fix applies: ``credential`` (remove it first: adopt would refuse it),
        ``duplicate``, ``put_back``, ``empty``, ``by_hand`` or ``adopt``."""
        if self.credential is not None:
            return "credential"
        if self.duplicate:
            return "duplicate"
        if self.note_id is not None:
            return "put_back"
        if self.code == "empty":
            return "empty"
        return "adopt" if self.adoptable else "by_hand"

    @property
    def fix(self) -> str:
        """What to do, naming the command."""
        command, kind = self.adopt_command(), self.fix_kind
        if kind == "credential":
            return (
                f"it holds {self.credential}: remove it (say where the secret lives instead), "
                f"then run: {command}"
            )
        if kind == "duplicate":
            return (
                f"note {self.note_id!r} is also in {self.note_id}{NOTE_SUFFIX}: compare the two "
                "and delete the copy you do not need"
            )
        if kind == "put_back":
            return f"put it back as {self.note_id}{NOTE_SUFFIX} with: {command}"
        if kind == "empty":
            return f"delete it, or write the note in it and run: {command}"
        if kind == "by_hand":
            return f"fix it by hand, or remove its frontmatter and make it a note with: {command}"
        return f"make it a note with: {command} (the original is backed up first)"

    @property
    def message(self) -> str:
        return f"{self.why}; {self.fix}"

    def to_json(self) -> dict[str, str | bool | None]:
        return {
            "scope": self.scope,
            "file": self.relative,
            "path": str(self.path),
            "code": self.code,
            "noteId": self.note_id,
            "reason": self.why,
            "fix": self.fix,
            "adoptable": self.adoptable and not self.duplicate,
            "kind": "misplaced note" if self.note_id is not None else "not a note yet",
        }


def _credential_in(path: Path) -> str | None:
    """The first credential the file holds, described without its value; None when it holds
    none or cannot be read."""
    from oharness.notes.secrets import find_secrets

    try:
        with path.open("rb") as handle:
            text = handle.read(MAX_READ_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    found = find_secrets({"file": text})
    return found[0].describe() if found else None


def is_markdown_name(name: str) -> bool:
    """A Markdown file name (any letter case), not hidden, not a temp file."""
    return (
        not name.startswith(".")
        and not is_temp_name(name)
        and name.lower().endswith(MARKDOWN_SUFFIXES)
    )


def from_problem(problem: LoadProblem, scope: Scope) -> LooseFile | None:
    """The loose file a load problem of the folder's top level is, if it is one."""
    name = problem.path.name
    if problem.reason == "name_mismatch" and problem.note_id is not None:
        why = (
            f"note {problem.note_id!r} renamed by hand to {name}: a note is read only from "
            f"{problem.note_id}{NOTE_SUFFIX}"
        )
        return LooseFile(problem.path, name, scope, problem.reason, why, problem.note_id)
    if problem.reason in NOT_A_NOTE_REASONS:
        if _blank(problem.path):  # nothing to adopt: adopt would refuse an empty body
            return LooseFile(problem.path, name, scope, "empty", "an empty file", adoptable=False)
        why = f"not a note yet: {problem.message}"
        adoptable = _guessable(problem.reason, problem.path)
        return LooseFile(problem.path, name, scope, problem.reason, why, adoptable=adoptable)
    return None


def _blank(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return not handle.read(4096).strip()
    except OSError:
        return False


def _guessable(reason: str, path: Path) -> bool:
    """Whether a note can be made of the file without a person's fix: no frontmatter, another
    program's frontmatter (YAML), or a JSON object with some field wrong or missing."""
    if reason in ("unclosed_frontmatter", "invalid_characters", "not_utf8", "not_an_object"):
        return False
    if reason != "invalid_json":
        return True
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return False
    return not head.partition("\n")[2].lstrip().startswith("{")  # broken JSON: not guessed


def find_loose_files(store: NoteStore) -> list[LooseFile]:
    """Every loose Markdown file of ``store``'s folder, sorted by path (at most
    :data:`MAX_LISTED`); files are only read, never changed."""
    found = [
        loose
        for problem in store.problems()
        if (loose := from_problem(problem, store.scope)) is not None
    ]
    for path, relative in _other_markdown(store.directory):
        if len(found) >= MAX_LISTED:
            break
        found.append(classify(path, relative, store.scope))
    return sorted(
        (
            replace(loose, duplicate=True)
            if loose.note_id is not None and store.get_folded(loose.note_id) is not None
            else loose
            for loose in found
        ),
        key=lambda loose: loose.relative,
    )


def _other_markdown(directory: Path) -> Iterator[tuple[Path, str]]:
    """Markdown files the store never lists: at the top level those not ending exactly in
    ``.md``, and every one in a subfolder (hidden folders and symlinks left out)."""
    for current, dirnames, filenames in os.walk(directory, followlinks=False):
        dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
        top = current == str(directory)
        for name in sorted(filenames):
            if not is_markdown_name(name) or (top and name.endswith(NOTE_SUFFIX)):
                continue
            path = Path(current) / name
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue  # a symlink or a special file: never opened
            except OSError:
                continue
            yield path, path.relative_to(directory).as_posix()


def classify(path: Path, relative: str, scope: Scope) -> LooseFile:
    """What a Markdown file the store does not list is (read, never changed)."""
    in_subfolder = "/" in relative
    where = (
        f"in the subfolder {relative.rsplit('/', 1)[0]}/, and notes are read only directly in "
        "the notes folder"
        if in_subfolder
        else f"named {path.name}, and a note file ends in {NOTE_SUFFIX}"
    )
    code = "in_subfolder" if in_subfolder else "misnamed"
    try:
        size = os.stat(path).st_size
        if size > MAX_READ_BYTES:
            why = f"not a note yet: {size:,} bytes, over {MAX_READ_BYTES:,}; split it"
            return LooseFile(path, relative, scope, "too_large", why)
        note = parse_note_bytes(path.read_bytes())
    except OSError as exc:
        why = f"cannot be read: {exc.strerror or exc}"
        return LooseFile(path, relative, scope, "unreadable", why)
    except NoteFormatError as exc:
        reason = str(exc.details.get("reason") or "not_a_note")
        why = f"not a note yet: {exc.message} ({where})"
        return LooseFile(path, relative, scope, reason, why, adoptable=_guessable(reason, path))
    why = f"note {note.id!r} {where}"
    return LooseFile(path, relative, scope, code, why, note.id)
