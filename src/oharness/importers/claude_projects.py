"""Claude Code's project folders: how it names them, which ones a path holds, where they came from.

Claude Code keeps one folder per project under ``~/.claude/projects/``, named after the
project's absolute path with every character that is not an ASCII letter or digit replaced by
``-`` (``/home/ada/my_shop`` → ``-home-ada-my-shop``; a character outside the Basic
Multilingual Plane counts twice, as in JavaScript); a name longer than 200 characters is cut
at 200 and given ``-`` and a hash. Auto memory lives in ``<folder>/memory/`` of the
repository's main worktree. The rule is lossy (``my_shop`` and ``my-shop`` share a name), so a
folder is traced back by the ``cwd`` its session transcripts record, else by walking the disk
for folders whose name encodes to it. Nothing here writes.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

CLAUDE_INDEX: Final = "MEMORY.md"
INSTRUCTION_FILES: Final = ("CLAUDE.md", "CLAUDE.local.md")
NAME_LIMIT: Final = 200
_NOT_ALPHANUMERIC: Final = re.compile(r"[^a-zA-Z0-9]")
_HASH_TAIL: Final = re.compile(r"-[0-9a-z]+")
_TRANSCRIPTS_READ: Final = 5
_TRANSCRIPT_HEAD_BYTES: Final = 262_144
_FOLDERS_LISTED: Final = 2_000


def claude_folder_name(path: Path | str) -> str:
    """The name Claude Code gives the project folder of ``path`` (before any long-name hash)."""

    def dashes(match: re.Match[str]) -> str:
        return "--" if ord(match.group(0)) > 0xFFFF else "-"

    return _NOT_ALPHANUMERIC.sub(dashes, str(path))


def name_matches(folder_name: str, path: Path | str) -> bool:
    """True when ``folder_name`` is the name Claude Code gives ``path``.

    A name past 200 characters is compared on those 200 characters: the hash Claude Code
    appends differs between its builds, so it is not recomputed.
    """
    encoded = claude_folder_name(path)
    if len(encoded) <= NAME_LIMIT:
        return folder_name == encoded
    head, tail = folder_name[:NAME_LIMIT], folder_name[NAME_LIMIT:]
    return head == encoded[:NAME_LIMIT] and _HASH_TAIL.fullmatch(tail) is not None


@dataclass(frozen=True)
class ClaudeProject:
    """One Claude Code project folder with auto memory."""

    name: str  # the folder's name under projects/, e.g. "-home-ada-shop"
    folder: Path  # the project folder
    memory: Path  # its memory folder


@dataclass(frozen=True)
class InstructionFile:
    """A CLAUDE.md file: whose instructions they are."""

    path: Path
    where: str  # "user-wide", or the name of the folder it is for
    user_wide: bool = False


@dataclass(frozen=True)
class ClaudeTree:
    """What a PATH given to ``import claude-code`` holds."""

    projects: list[ClaudeProject] = field(default_factory=list)
    single: bool = False  # PATH named one project folder or one memory folder
    # CLAUDE.md files at PATH (a repository's), or beside projects/ (~/.claude/CLAUDE.md)
    instructions: list[InstructionFile] = field(default_factory=list)


def read_claude_tree(root: Path) -> ClaudeTree:
    """The Claude Code projects at ``root``: ``~/.claude``, ``projects/``, a project, a memory."""
    root = root.resolve()
    if (root / CLAUDE_INDEX).is_file() or root.name == "memory":
        folder = root.parent if root.name == "memory" else root
        return ClaudeTree([ClaudeProject(folder.name, folder, root)], single=True)
    if _real_dir_inside(root / "memory", root):
        return ClaudeTree([ClaudeProject(root.name, root, root / "memory")], single=True)
    config_folder = (root / "projects").is_dir()
    parent = root / "projects" if config_folder else root
    projects = [
        ClaudeProject(child.name, child, child / "memory")
        for child in sorted(parent.iterdir() if parent.is_dir() else [])
        if _real_dir_inside(child, root) and _real_dir_inside(child / "memory", root)
    ]
    if config_folder or root.name == "projects":
        home_folder = root if config_folder else root.parent
        user_wide = [
            InstructionFile(path, "user-wide", True) for path in instruction_files(home_folder)
        ]
        return ClaudeTree(projects, False, user_wide)
    return ClaudeTree(projects, False, project_instructions(root))


def project_instructions(root: Path) -> list[InstructionFile]:
    """The CLAUDE.md files of a project folder: at its top and in its ``.claude/``."""
    return [InstructionFile(path, root.name) for path in instruction_files(root, root / ".claude")]


def instruction_files(*folders: Path) -> list[Path]:
    """The CLAUDE.md and CLAUDE.local.md files directly in ``folders`` (symlinks left out)."""
    return [
        (folder / name).resolve()
        for folder in folders
        for name in INSTRUCTION_FILES
        if (folder / name).is_file() and not (folder / name).is_symlink()
    ]


def _real_dir_inside(path: Path, root: Path) -> bool:
    if path.is_symlink() or not path.is_dir():
        return False
    return path.resolve().is_relative_to(root.resolve())


@dataclass(frozen=True)
class Located:
    """The folders a Claude Code project folder stands for, and whether they are certain."""

    folders: list[Path]
    traced: bool  # named by its transcripts (exact), not only by a name several paths share


def locate_project_folders(project: ClaudeProject) -> Located:
    """The folders on this machine a Claude Code project folder stands for (may be several)."""
    recorded = [
        path for path in transcript_folders(project.folder) if name_matches(project.name, path)
    ]
    if recorded:
        return Located(recorded, traced=True)
    return Located(folders_named(project.name), traced=False)


def transcript_folders(folder: Path) -> list[Path]:
    """The existing working folders the newest session transcripts (``*.jsonl``) record."""
    try:
        transcripts = [
            entry
            for entry in os.scandir(folder)
            if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False)
        ]
    except OSError:
        return []
    transcripts.sort(key=_modified, reverse=True)
    found: dict[Path, None] = {}
    for entry in transcripts[:_TRANSCRIPTS_READ]:
        for cwd in _recorded_cwds(Path(entry.path)):
            path = Path(cwd)
            if path.is_absolute() and path.is_dir():
                found[path.resolve()] = None
    return list(found)


def _modified(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return 0.0


def _recorded_cwds(transcript: Path) -> set[str]:
    try:
        with transcript.open("rb") as handle:
            head = handle.read(_TRANSCRIPT_HEAD_BYTES)
    except OSError:
        return set()
    cwds: set[str] = set()
    for line in head.split(b"\n"):
        if b'"cwd"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("cwd"), str):
            cwds.add(record["cwd"])
    return cwds


def folders_named(name: str) -> list[Path]:
    """Existing folders whose absolute path Claude Code would give ``name``, found on disk.

    The walk only enters folders whose own name is a prefix of ``name``, so it stays small;
    a long (hashed) name is not walked: its transcripts are the only trace.
    """
    if not name.startswith("-") or len(name) > NAME_LIMIT:
        return []
    found: list[Path] = []
    pending: list[tuple[Path, str]] = [(Path("/"), "")]
    listed = 0
    while pending and listed < _FOLDERS_LISTED:
        folder, encoded = pending.pop()
        listed += 1
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            child = f"{encoded}-{claude_folder_name(entry.name)}"
            if child != name and not name.startswith(child + "-"):
                continue
            try:
                is_folder = entry.is_dir()
            except OSError:
                continue
            if not is_folder:
                continue
            if child == name:
                found.append(Path(entry.path).resolve())
            else:
                pending.append((Path(entry.path), child))
    return list(dict.fromkeys(found))
