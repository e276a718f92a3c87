"""Which oharness project each Claude Code project folder belongs to.

A pure decision (:func:`route_to_current`, :func:`route_each`) over facts gathered first
(:func:`current_facts`, :func:`owners_of`). A folder in a linked git worktree is counted at the
same place in the main worktree, so every worktree of a repository is one project. A Claude
Code folder belongs to the current project when its name is the name of the project's folder
in any worktree of its repository; or when a folder it stands for belongs to the project (the
nearest project root), or to a clone of it (the same project id, or the same root commit
before the project is registered).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from oharness.errors import OHarnessError, ProjectError
from oharness.importers.claude_projects import ClaudeProject, claude_folder_name
from oharness.importers.gitinfo import GitPlace, git_place, root_commit, worktree_paths
from oharness.project.identity import ProjectLocation, find_project, read_identity


@dataclass(frozen=True)
class FolderOwner:
    """The oharness project a folder on this machine belongs to."""

    folder: Path
    root: Path | None  # the project's root, a linked worktree counted as its main worktree
    registered: bool
    key: str | None  # the project id, or ``git-<root commit>`` until it is registered


@dataclass(frozen=True)
class CurrentProject:
    """The project the command runs in, and every Claude Code folder name that is its own."""

    root: Path
    key: str | None
    names: frozenset[str]
    main_root: Path | None = None  # the same place in the main worktree, from a linked one


@dataclass(frozen=True)
class Route:
    """Where one Claude Code project goes: a project root, or nowhere with the reason."""

    project: ClaudeProject
    target: Path | None
    reason: str = ""


def route_to_current(
    project: ClaudeProject,
    owners: list[FolderOwner],
    current: CurrentProject | None,
    *,
    traced: bool = False,
) -> Route:
    """Import ``project`` into the current project only when it is the current project's.

    ``traced``: the owners come from the project's transcripts, so they decide alone; a name
    alone (which several paths can share) only counts otherwise.
    """
    shared = _shared_name(project, owners, current, traced)
    if shared is not None:
        return Route(project, None, shared)
    if current is not None and _is_current(project, owners, current, traced):
        return Route(project, current.root)
    if owners:
        where = _places(owners)
        return Route(
            project,
            None,
            f"another project's memory ({where}): run the import there, or add --all",
        )
    return Route(project, None, _no_folder_reason())


def route_each(
    project: ClaudeProject,
    owners: list[FolderOwner],
    current: CurrentProject | None,
    *,
    traced: bool = False,
) -> Route:
    """Import ``project`` into the registered project it belongs to (``--all``)."""
    shared = _shared_name(project, owners, current, traced)
    if shared is not None:
        return Route(project, None, shared)
    if current is not None and _is_current(project, owners, current, traced):
        return Route(project, current.root)
    roots = sorted({owner.root for owner in owners if owner.registered and owner.root})
    if len(roots) == 1:
        return Route(project, roots[0])
    if len(roots) > 1:
        return Route(project, None, _several(roots))
    if owners:
        where = _places(owners)
        return Route(
            project,
            None,
            f"no registered project at {where}: run 'oharness project init' there first",
        )
    return Route(project, None, _no_folder_reason())


def _shared_name(
    project: ClaudeProject,
    owners: list[FolderOwner],
    current: CurrentProject | None,
    traced: bool,
) -> str | None:
    """Why ``project`` is not imported into the current project although its name fits it:
    the name (where "-", "_", "." and "/" are all "-") fits another project's folder too, and
    no transcript says which; None otherwise."""
    if traced or current is None or project.name not in current.names:
        return None
    mine = {current.root, current.main_root or current.root}
    others = {
        owner.root
        for owner in owners
        if owner.root is not None
        and owner.root not in mine
        and (owner.key is None or owner.key != current.key)  # a clone of this one is not
    }
    return _several(sorted({current.root, *others})) if others else None


def _several(roots: Iterable[Path]) -> str:
    names = ", ".join(str(root) for root in roots)
    return (
        f"several projects have this Claude Code name ({names}): run the import in the right "
        "one and name this folder alone"
    )


def _places(owners: Iterable[FolderOwner]) -> str:
    return ", ".join(dict.fromkeys(str(owner.root or owner.folder) for owner in owners))


def _no_folder_reason() -> str:
    return (
        "no folder on this machine has this Claude Code name (it may have moved or gone): "
        "name this folder alone to import it into the current project"
    )


def _is_current(
    project: ClaudeProject,
    owners: list[FolderOwner],
    current: CurrentProject,
    traced: bool,
) -> bool:
    if project.name in current.names and not (traced and owners):
        return True
    return _any_owned(owners, current)


def _any_owned(owners: Iterable[FolderOwner], current: CurrentProject) -> bool:
    roots = {current.root, current.main_root or current.root}
    for owner in owners:
        if owner.root is not None and owner.root in roots:
            return True
        if owner.key is not None and owner.key == current.key:
            return True
    return False


def current_facts(root: Path, project_id: str | None) -> CurrentProject:
    """The facts about the current project that routing compares with."""
    root = root.resolve()
    place = git_place(root)
    if place is None or not root.is_relative_to(place.top_level):
        return CurrentProject(root, project_id, frozenset({claude_folder_name(root)}))
    inside = root.relative_to(place.top_level)
    worktrees = [place.top_level, *worktree_paths(root)]
    main_root = None
    if place.main_worktree is not None:
        worktrees.append(place.main_worktree)
        main_root = place.main_worktree / inside
    names = frozenset(claude_folder_name(worktree / inside) for worktree in worktrees)
    key = project_id
    if key is None:
        commit = root_commit(root)
        key = f"git-{commit}" if commit else None
    return CurrentProject(root, key, names | {claude_folder_name(root)}, main_root)


def owners_of(folders: Iterable[Path], home: Path) -> list[FolderOwner]:
    """The project each folder belongs to, as ``find_project`` sees it from there."""
    owners: list[FolderOwner] = []
    for folder in folders:
        place = git_place(folder)
        start = _in_main_worktree(folder, place) if place is not None else folder
        location = _project_at(start, home)
        root = location.root.resolve() if location is not None else None
        registered = location is not None and location.registered
        key = _identity_id(root) if registered and root is not None else None
        if key is None and place is not None:
            commit = root_commit(folder)
            key = f"git-{commit}" if commit else None
        owners.append(FolderOwner(folder, root, registered, key))
    return owners


def _in_main_worktree(folder: Path, place: GitPlace) -> Path:
    """The same place in the main worktree (or the nearest folder above it that exists)."""
    main = place.main_worktree
    if main is None or not place.is_linked_worktree or not folder.is_relative_to(place.top_level):
        return folder
    candidate = main / folder.relative_to(place.top_level)
    while candidate != main and not candidate.is_dir():
        candidate = candidate.parent
    return candidate


def _project_at(start: Path, home: Path) -> ProjectLocation | None:
    """The project found from ``start``; none where discovery refuses the folder."""
    if not start.is_dir():
        return None
    try:
        return find_project(start, home)
    except OHarnessError:
        return None


def _identity_id(root: Path) -> str | None:
    try:
        return read_identity(root).id
    except (ProjectError, OSError):
        return None
