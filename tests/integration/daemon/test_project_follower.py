"""The daemon hosts the projects this machine used: gone or unregistered folders lose their
mark, a second folder of a hosted project is synced beside it (left alone without background
sync) until it is gone or the project forgotten, a second look adds nothing, and a project
removed through the API is no longer followed."""

from __future__ import annotations

import shutil
from pathlib import Path

from daemon_support import project_daemon

from oharness.daemon.background.following import ProjectFollower
from oharness.memory.workspace import Workspace, open_workspace
from oharness.project.paths import HomeLayout
from oharness.project.used import used_projects


def _used(home: Path, name: Path) -> None:
    name.mkdir()
    open_workspace(name, home, register=True).close()


def test_every_project_used_here_is_hosted_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with project_daemon(tmp_path) as daemon:
        for name in ("other", "gone", "unregistered"):
            _used(home, tmp_path / name)
        shutil.rmtree(tmp_path / "gone")
        shutil.rmtree(tmp_path / "unregistered" / ".oharness")
        clone = tmp_path / "clone"  # a second folder of the daemon's own project
        (clone / ".oharness").mkdir(parents=True)
        shutil.copy(tmp_path / "project" / ".oharness" / "project.json", clone / ".oharness")
        open_workspace(clone, home, register=False).close()
        follower = ProjectFollower(daemon.state.registry, home)

        assert follower.follow() == [(tmp_path / "other").resolve()]
        hosted = {hosted.root.resolve() for hosted in daemon.state.registry.all()}
        assert hosted == {(tmp_path / name).resolve() for name in ("project", "other")}
        marked = {used.root.name for used in used_projects(HomeLayout(home))}
        assert marked == {"project", "other", "clone"}
        assert follower.follow() == []
        other = next(h for h in daemon.state.registry.all() if h.root.name == "other")
        with daemon.client() as http:  # removed by hand: no longer followed
            assert http.delete(f"/workspaces/{other.project_id}").status_code == 200
        assert "other" not in {used.root.name for used in used_projects(HomeLayout(home))}
        assert follower.follow() == []


class Recorder:
    """Background sync's side of the other folders: which are synced now."""

    def __init__(self) -> None:
        self.synced: dict[str, Workspace] = {}

    def add_folder(self, folder: str, workspace: Workspace) -> None:
        self.synced[folder] = workspace

    def drop_folder(self, folder: str) -> None:
        self.synced.pop(folder).close()


def test_another_folder_of_a_hosted_project_is_followed_until_gone_or_forgotten(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with project_daemon(tmp_path) as daemon:
        folders = [tmp_path / name for name in ("clone", "copy")]
        for folder in folders:  # second folders of the daemon's own project
            (folder / ".oharness").mkdir(parents=True)
            shutil.copy(tmp_path / "project" / ".oharness" / "project.json", folder / ".oharness")
            open_workspace(folder, home, register=False).close()
        follower = ProjectFollower(daemon.state.registry, home)
        follower.folders = recorder = Recorder()

        assert set(follower.follow()) == {folder.resolve() for folder in folders}
        assert set(recorder.synced) == {str(folder.resolve()) for folder in folders}
        assert {h.root.name for h in daemon.state.registry.all()} == {"project"}  # not hosted
        assert follower.follow() == []
        shutil.rmtree(folders[1])
        follower.follow()
        assert set(recorder.synced) == {str(folders[0].resolve())}
        assert {used.root.name for used in used_projects(HomeLayout(home))} == {"project", "clone"}
        project_id = daemon.state.registry.default.project_id
        assert project_id is not None
        follower.forget_project(project_id)
        assert recorder.synced == {}
        assert used_projects(HomeLayout(home)) == []
        assert follower.follow() == []
