"""The discovery rule's pieces on real folders: folders that are never projects, the layout
of a linked worktree's ``.git`` file, and the user's safe directories."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from oharness.project.discovery import discover, main_worktree, never_project, safe_directories


@pytest.mark.parametrize(
    "folder",
    ["/", "/etc", "/etc/nginx", "/usr", "/usr/lib/python3", "/tmp", "/var/tmp", "/home", "/var"],
)
def test_system_folders_are_never_projects(folder: str, tmp_path: Path) -> None:
    assert never_project(folder, str(tmp_path / "home")) is not None


@pytest.mark.parametrize("folder", ["/usr/src/app", "/usr/local/src/tool", "/var/www/site"])
def test_folders_where_people_keep_projects(folder: str, tmp_path: Path) -> None:
    assert never_project(folder, str(tmp_path / "home")) is None


def test_the_home_folder_and_oharness_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    person = tmp_path / "person"
    person.mkdir()
    monkeypatch.setenv("HOME", str(person))
    home = str(person / ".oharness")
    assert "your home folder" in str(never_project(str(person), home))
    assert "OHARNESS_HOME" in str(never_project(str(person / ".oharness" / "x"), home))
    assert never_project(str(person / "code"), home) is None
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))
    assert "temp folder" in str(never_project(str(tmp_path / "scratch"), home))


def test_a_linked_worktree_layout_names_its_main_worktree(tmp_path: Path) -> None:
    main = tmp_path / "main"
    git_dir = main / ".git" / "worktrees" / "wt"
    git_dir.mkdir(parents=True)
    (git_dir / "commondir").write_text("../..\n")
    linked = tmp_path / "elsewhere" / "wt"
    linked.mkdir(parents=True)
    (linked / ".git").write_text(f"gitdir: {git_dir}\n")
    assert main_worktree(str(linked)) == str(main.resolve())
    # A submodule's git folder has no commondir: it is a repository of its own.
    module_dir = main / ".git" / "modules" / "lib"
    module_dir.mkdir(parents=True)
    sub = main / "lib"
    sub.mkdir()
    (sub / ".git").write_text("gitdir: ../.git/modules/lib\n")
    assert main_worktree(str(sub)) is None
    # A worktree of a bare repository has no main worktree: it stands for itself.
    bare_dir = tmp_path / "repo.git" / "worktrees" / "wt2"
    bare_dir.mkdir(parents=True)
    (bare_dir / "commondir").write_text("../..\n")
    alone = tmp_path / "wt2"
    alone.mkdir()
    (alone / ".git").write_text(f"gitdir: {bare_dir}\n")
    assert main_worktree(str(alone)) is None
    found = discover(str(alone), str(tmp_path / "home"))
    assert found is not None and found.root == str(alone.resolve()) and found.worktree is None


def test_safe_directories_come_from_the_users_config_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert safe_directories(str(home)) == []
    (home / "config.json").write_text(
        json.dumps({"projects": {"safeDirectories": ["*", str(tmp_path / "a"), 3, ""]}})
    )
    assert safe_directories(str(home)) == ["*", os.path.realpath(tmp_path / "a")]
    (home / "config.json").write_text("{ broken")
    assert safe_directories(str(home)) == []


def test_a_folder_made_in_a_temp_folder_may_be_a_project(tmp_path: Path) -> None:
    assert never_project("/dev/shm/work/repo", str(tmp_path / "home")) is None
    assert never_project("/dev/shm", str(tmp_path / "home")) is not None
