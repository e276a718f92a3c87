"""``import claude-code``: which Claude Code projects go where, then reading them.

A PATH naming one project folder or one memory folder is read into the current project, as
asked. A PATH holding several (``~/.claude``, ``~/.claude/projects``) brings in only the
projects that are the current project's (:func:`route_to_current`); with ``route_all`` each
goes to its own registered project (:func:`route_each`). Every project left out is reported
with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from oharness.importers.claude_projects import (
    ClaudeProject,
    ClaudeTree,
    locate_project_folders,
    project_instructions,
    read_claude_tree,
)
from oharness.importers.claude_routing import (
    CurrentProject,
    Route,
    owners_of,
    route_each,
    route_to_current,
)
from oharness.importers.readers import read_claude_projects
from oharness.importers.source import Reading, Skip


@dataclass
class ClaudePlan:
    """The projects to read per target (``None``: the current workspace) and those left out."""

    tree: ClaudeTree
    current_root: Path | None = None
    groups: dict[Path | None, list[ClaudeProject]] = field(default_factory=dict)
    left_out: list[Route] = field(default_factory=list)
    #: One line per folder named alone that traces back to another project on this machine:
    #: imported here as asked, and said.
    notices: list[str] = field(default_factory=list)


def plan_claude_import(
    path: Path, current: CurrentProject | None, *, route_all: bool, home: Path
) -> ClaudePlan:
    """Decide where each Claude Code project under ``path`` goes."""
    tree = read_claude_tree(path)
    plan = ClaudePlan(tree, current.root if current is not None else None)
    if tree.single and not route_all:
        plan.groups[None] = list(tree.projects)
        for project in tree.projects:
            notice = _elsewhere(project, current, home)
            if notice is not None:
                plan.notices.append(notice)
        return plan
    decide = route_each if route_all else route_to_current
    for project in tree.projects:
        located = locate_project_folders(project)
        owners = owners_of(located.folders, home)
        route = decide(project, owners, current, traced=located.traced)
        if route.target is None:
            plan.left_out.append(route)
            continue
        key = None if current is not None and route.target == current.root else route.target
        plan.groups.setdefault(key, []).append(project)
    return plan


def _elsewhere(project: ClaudeProject, current: CurrentProject | None, home: Path) -> str | None:
    """What to say when a folder named alone belongs to another project on this machine (its
    sessions ran there, or, without them, its name is that project's folder)."""
    located = locate_project_folders(project)
    owners = owners_of(located.folders, home)
    if current is not None and route_to_current(project, owners, current, traced=True).target:
        return None  # this project's own, or a clone's
    others = sorted({str(owner.root) for owner in owners if owner.root is not None})
    if not others or (current is not None and str(current.root) in others):
        return None
    how = "its sessions ran in" if located.traced else "its name is the folder of"
    where = ", ".join(others)
    return f"{project.folder.name}: {how} {where}, another project: imported here as asked"


def read_planned(
    path: Path, plan: ClaudePlan, target: Path | None, *, include_instructions: bool
) -> Reading:
    """The reading of one target's projects, with the CLAUDE.md files that go with them: the
    target project's own, and for the current project those found at PATH."""
    projects = plan.groups.get(target, [])
    instructions = list(plan.tree.instructions) if target is None else []
    root = target or plan.current_root
    if root is not None:
        known = {item.path for item in instructions}
        instructions += [item for item in project_instructions(root) if item.path not in known]
    if target is None and not projects and not instructions and plan.tree.projects:
        return Reading()  # every project went elsewhere or was left out: nothing to say here
    return read_claude_projects(
        path, projects, instructions=instructions, include=include_instructions
    )


def left_out_skips(path: Path, plan: ClaudePlan) -> list[Skip]:
    """One skip per Claude Code project left out, named by its folder under ``path``."""
    return [Skip(_named(path, route.project), route.reason) for route in plan.left_out]


def planned_sources(path: Path, plan: ClaudePlan, target: Path | None) -> list[str]:
    """The Claude Code project folders planned for ``target``, named as in the report."""
    return [_named(path, project) for project in plan.groups.get(target, [])]


def _named(path: Path, project: ClaudeProject) -> str:
    base = path.resolve()
    folder = project.folder.resolve()
    return folder.relative_to(base).as_posix() if folder.is_relative_to(base) else str(folder)
