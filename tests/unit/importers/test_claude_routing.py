"""Which project a Claude Code project goes to, decided row by row from gathered facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from repos import git

from oharness.importers.claude_projects import ClaudeProject, claude_folder_name
from oharness.importers.claude_routing import (
    CurrentProject,
    FolderOwner,
    current_facts,
    route_each,
    route_to_current,
)

SHOP = Path("/w/shop")
OTHER = Path("/w/other")
CURRENT = CurrentProject(SHOP, "git-aaa", frozenset({"-w-shop"}))
FROM_WORKTREE = CurrentProject(Path("/w/shop-wt"), None, frozenset({"-w-shop-wt"}), SHOP)
PROJECT = ClaudeProject("-w-x", Path("/c/-w-x"), Path("/c/-w-x/memory"))


def _owner(
    root: Path | None = OTHER,
    *,
    registered: bool = True,
    key: str | None = "git-bbb",
) -> FolderOwner:
    return FolderOwner(Path("/w/x"), root, registered, key)


@pytest.mark.parametrize(
    ("name", "owners", "target", "reason"),
    [
        ("-w-shop", [], SHOP, ""),  # the project's own folder name, even if gone
        ("-w-x", [_owner(SHOP)], SHOP, ""),  # a folder inside the project
        ("-w-x", [_owner(key="git-aaa")], SHOP, ""),  # a clone: the same project id
        ("-w-x", [_owner()], None, "another project's memory (/w/other)"),
        ("-w-x", [_owner(None, key=None)], None, "another project's"),
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


def test_transcripts_outrank_a_shared_name() -> None:
    # /w/shop and /w/other-path both encode to -w-shop; the transcripts name the other one.
    project = ClaudeProject("-w-shop", PROJECT.folder, PROJECT.memory)
    assert route_to_current(project, [_owner()], CURRENT, traced=True).target is None
    # With no transcript, the name alone fits both: refused (the other project's notes would
    # land here), as --all refuses it; named alone, the folder is imported here.
    untraced = route_to_current(project, [_owner(), _owner(SHOP)], CURRENT)
    assert untraced.target is None and "several projects" in untraced.reason
    assert f"{OTHER}" in untraced.reason and f"{SHOP}" in untraced.reason
    assert route_each(project, [_owner(), _owner(SHOP)], CURRENT).target is None
    assert route_to_current(project, [_owner(SHOP)], CURRENT).target == SHOP
    assert route_to_current(project, [_owner(key="git-aaa")], CURRENT).target == SHOP  # a clone
    assert route_to_current(project, [], CURRENT, traced=True).target == SHOP
    assert route_each(project, [_owner()], CURRENT, traced=True).target == OTHER


def test_from_a_linked_worktree_the_main_worktrees_folders_count() -> None:
    route = route_to_current(PROJECT, [_owner(SHOP, key=None)], FROM_WORKTREE)
    assert route.target == FROM_WORKTREE.root


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


def test_current_facts_name_the_project_in_every_worktree(tmp_path: Path) -> None:
    repository = tmp_path / "mono"
    (repository / "packages" / "pay").mkdir(parents=True)
    git(repository, "init", "-q")
    (repository / "packages" / "pay" / "a.txt").write_text("a\n", encoding="utf-8")
    git(repository, "add", ".")
    git(repository, "commit", "-q", "-m", "first")
    worktree = repository / ".claude" / "worktrees" / "feature"
    git(repository, "worktree", "add", "-q", str(worktree))

    package = current_facts(repository / "packages" / "pay", None)
    assert package.names == {
        claude_folder_name(repository / "packages" / "pay"),
        claude_folder_name(worktree / "packages" / "pay"),
    }
    assert package.key is not None and package.key.startswith("git-")
    top = current_facts(repository, "p-1")
    assert top.names == {claude_folder_name(repository), claude_folder_name(worktree)}
    assert top.key == "p-1" and top.main_root == repository.resolve()
    linked = current_facts(worktree, None)
    assert linked.main_root == repository.resolve() and linked.key == package.key
    plain = current_facts(tmp_path, None)
    assert plain.names == {claude_folder_name(tmp_path.resolve())} and plain.key is None
