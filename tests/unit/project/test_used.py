"""The marks of the projects this machine used: written once 0600, read back, dropped."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from oharness.memory.workspace import open_workspace
from oharness.project.paths import HomeLayout
from oharness.project.used import forget_used, mark_used, used_projects


def test_opening_a_project_marks_it_once_privately(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    workspace = open_workspace(project, home, register=True)
    assert workspace.project is not None and workspace.project.identity is not None
    layout = HomeLayout(home)
    [used] = used_projects(layout)
    assert used.root == project.resolve()
    assert used.project_id == workspace.project.identity.id
    assert stat.S_IMODE(used.mark.stat().st_mode) == 0o600
    written = used.mark.stat().st_mtime_ns
    os.utime(used.mark, ns=(written - 10**9, written - 10**9))
    open_workspace(project, home, register=False).close()  # the same mark: not written again
    assert used.mark.stat().st_mtime_ns == written - 10**9
    forget_used(used)
    assert used_projects(layout) == []


def test_a_folder_that_is_not_a_project_leaves_no_mark(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "plain"
    folder.mkdir()
    open_workspace(folder, home, register=False).close()
    assert used_projects(HomeLayout(home)) == []


def test_a_changed_id_rewrites_the_mark_and_unreadable_marks_are_skipped(tmp_path: Path) -> None:
    layout = HomeLayout(tmp_path / "home")
    mark_used(layout, tmp_path, "p-one", tmp_path / "MEMORY")
    mark_used(layout, tmp_path, "p-two", tmp_path / "MEMORY")
    (layout.used_projects_dir / "broken.json").write_text("{", encoding="utf-8")
    assert [used.project_id for used in used_projects(layout)] == ["p-two"]
