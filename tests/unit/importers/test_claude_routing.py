"""Which project a Claude Code project goes to, decided row by row from gathered facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from oharness.importers.claude_projects import ClaudeProject
from oharness.importers.claude_routing import (
    CurrentProject,
    FolderOwner,
    route_each,
    route_to_current,
)

SHOP = Path("/w/shop")
OTHER = Path("/w/other")
CURRENT = CurrentProject(SHOP, "git-aaa", Path("/w/shop/.git"), frozenset({"-w-shop"}))
PROJECT = ClaudeProject("-w-x", Path("/c/-w-x"), Path("/c/-w-x/memory"))


def _owner(
    root: Path | None = OTHER,
    *,
    registered: bool = True,
    key: str | None = "git-bbb",
    repository: Path | None = Path("/w/other/.git"),
) -> FolderOwner:
    return FolderOwner(Path("/w/x"), root, registered, key, repository)


@pytest.mark.parametrize(
    ("name", "owners", "target", "reason"),
    [
        ("-w-shop", [], SHOP, ""),  # the project's own folder name, even if gone
        ("-w-x", [_owner(SHOP)], SHOP, ""),  # a folder inside the project
        ("-w-x", [_owner(repository=Path("/w/shop/.git"))], SHOP, ""),  # a linked worktree
        ("-w-x", [_owner(key="git-aaa", repository=Path("/z/.git"))], SHOP, ""),  # a clone
        ("-w-x", [_owner()], None, "another project's memory (/w/other)"),
        ("-w-x", [_owner(None, key=None, repository=None)], None, "another project's"),
        ("-w-x", [_owner(), _owner(SHOP)], SHOP, ""),  # lossy name: one fits, it is ours
        ("-w-x", [], None, "no folder on this machine"),
    ],
)
def test_route_to_current(
    name: str, owners: list[FolderOwner], target: Path | None, reason: str
) -> None:
    project = ClaudeProject(name, PROJECT.folder, PROJECT.memory)
    route = route_to_current(project, owners, CURRENT)
    assert route.target == target
    assert reason in route.reason and (target is None) == bool(route.reason)
    if target is None and owners:
        assert "--all" in route.reason


def test_nothing_is_the_current_projects_without_one() -> None:
    route = route_to_current(ClaudeProject("-w-shop", Path("/c"), Path("/c/m")), [], None)
    assert route.target is None


@pytest.mark.parametrize(
    ("owners", "target", "reason"),
    [
        ([_owner()], OTHER, ""),
        ([_owner(registered=False)], None, "project init"),
        ([_owner(), _owner(Path("/w/third"))], None, "several projects"),
        ([_owner(), _owner(OTHER)], OTHER, ""),
        ([], None, "no folder on this machine"),
        ([_owner(SHOP, registered=False, key=None)], SHOP, ""),  # the current project
    ],
)
def test_route_each(owners: list[FolderOwner], target: Path | None, reason: str) -> None:
    route = route_each(PROJECT, owners, CURRENT)
    assert route.target == target
    assert reason in route.reason and (target is None) == bool(route.reason)
